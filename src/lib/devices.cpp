// Devices: which ggml backend runs a graph, what it may round, and where the scheduler put each node.
#include <strings.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/platform.h"
#include "onnx2ggml/program.h"

#include "kernels/cpu_level.h"
#include "lib/abort_context.h"

namespace o2g {

using onnx2ggml::fail;

size_t parse_bytes(const std::string& opt, const std::string& v) {
    char* end = nullptr;
    double x = strtod(v.c_str(), &end);
    std::string unit = end ? std::string(end) : "";
    for (char& c : unit) c = char(toupper(static_cast<unsigned char>(c)));
    if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();   // "GB", "GiB", "MB" ...
    if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
    const std::string units = "KMGT";
    double scale = 1;
    if (unit.size() == 1 && units.find(unit[0]) != std::string::npos) scale = std::pow(1024.0, units.find(unit[0]) + 1);
    else if (!unit.empty() && unit != "B") x = -1;
    x *= scale;
    if (end == v.c_str() || !(x >= 1) || x >= 1.8e19)
        fail(opt, " takes a size in bytes such as 512M, 8G or 1048576, not '", v, "'");
    return size_t(x);
}

void set_backend_threads(ggml_backend_t backend, int n) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    if (!dev) return;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto fn = (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (fn) fn(backend, n);
}

static std::string registry_name(ggml_backend_t backend) {
    ggml_backend_dev_t dev = backend ? ggml_backend_get_device(backend) : nullptr;
    return dev ? ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev)) : "";
}

void set_device(Ctx& ctx, ggml_backend_t backend) {
    ctx.supports = [backend](const ggml_tensor* t) { return ggml_backend_supports_op(backend, t); };
    const std::string reg = registry_name(backend);
    ctx.exact_flash_attention = reg == "CPU" || reg == "Vulkan";
    ctx.direct_conv = reg == "Vulkan";
    ctx.kernel_first = reg != "CPU" && reg != "RPC";  // (an RPC server's backend is not known: the CPU's graph)
}

static thread_local const std::string* t_abort_context = nullptr;

AbortContext::AbortContext(const std::string& w) : what(w), previous(t_abort_context) { t_abort_context = &what; }
AbortContext::~AbortContext() { t_abort_context = previous; }

static void on_ggml_abort(const char* msg) {
    // Names the node when the abort came from building one on this thread.
    fprintf(stderr, "onnx2ggml: error: %s%sinternal ggml failure: %s\n", t_abort_context ? t_abort_context->c_str() : "",
            t_abort_context ? ": " : "", msg ? msg : "");
    fflush(stderr);
    onnx2ggml::platform::exit_now(3);
}

std::string cpu_code_description() {
    load_backends();
    std::string s = std::string("kernels ") + cpu_level_name() + "; ggml";
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : nullptr;
    auto get = reg ? (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features")
                   : nullptr;
    // ggml lists each compiled-in feature with value "1" (and a few informative entries we skip).
    for (const ggml_backend_feature* f = get ? get(reg) : nullptr; f && f->name; f++)
        if (std::string(f->value) == "1") s += std::string(" ") + f->name;
    return s;
}

bool Backends::is_cpu() const {
    return ggml_backend_dev_type(ggml_backend_get_device(main)) == GGML_BACKEND_DEVICE_TYPE_CPU;
}

ggml_type Backends::product_weights() const {
    return precision == "fast" && !is_cpu() ? GGML_TYPE_F16 : GGML_TYPE_F32;
}

std::vector<ggml_backend_t> Backends::in_priority_order() const {
    std::vector<ggml_backend_t> r;
    if (accel) r.push_back(accel);
    r.push_back(main);
    if (cpu) r.push_back(cpu);
    return r;
}

Backends::~Backends() {
    if (cpu) ggml_backend_free(cpu);
    if (accel) ggml_backend_free(accel);
    if (main) ggml_backend_free(main);
}

// Vulkan reads GGML_VK_DISABLE_F16 (and _COOPMAT, _COOPMAT2) once, when it creates a device, and cuBLAS reads
// NVIDIA_TF32_OVERRIDE when it starts (F32 products in TF32 were 1e-3 off on an H100); so a process has one
// precision per backend.
static void set_device_precision(ggml_backend_dev_t dev, const std::string& precision) {
    static std::mutex mu;
    static std::map<std::string, std::string> chosen;
    std::lock_guard<std::mutex> lock(mu);
    const char* name = ggml_backend_dev_name(dev);
    const bool vulkan = strncasecmp(name, "Vulkan", 6) == 0, cuda = strncasecmp(name, "CUDA", 4) == 0;
    if (!vulkan && !cuda) return;
    std::string& was = chosen[vulkan ? "Vulkan" : "CUDA"];
    if (!was.empty() && was != precision)
        fail("precision '", precision, "' on ", name, ": this process already opened ", vulkan ? "Vulkan" : "CUDA",
             " with '", was, "', and ggml's backend fixes it per process");
    was = precision;
    if (precision != "exact") return;
    if (cuda) onnx2ggml::platform::set_env("NVIDIA_TF32_OVERRIDE", "0");
    // Cooperative-matrix shaders (tensor cores through Vulkan) take F16 operands: exact mode keeps the F32 ones.
    if (vulkan)
        for (const char* v : {"GGML_VK_DISABLE_F16", "GGML_VK_DISABLE_COOPMAT", "GGML_VK_DISABLE_COOPMAT2"})
            onnx2ggml::platform::set_env(v, "1");
}

// Sessions open on several threads at once: ggml's registry and abort hook are process-wide, set up once.
#if defined(O2G_GGML_CPU_LEVELS)
// ggml's CPU backend built once per x86-64 level (scripts/setup.sh): the one for the level our kernels run at.
extern "C" ggml_backend_reg_t ggml_backend_cpu_reg_v2(void);
extern "C" ggml_backend_reg_t ggml_backend_cpu_reg_v3(void);
extern "C" ggml_backend_reg_t ggml_backend_cpu_reg_v4(void);
static ggml_backend_reg_t cpu_reg_for_level() {
    switch (cpu_level()) {
        case 4: return ggml_backend_cpu_reg_v4();
        case 3: return ggml_backend_cpu_reg_v3();
        default: return ggml_backend_cpu_reg_v2();
    }
}
#endif

void load_backends() {
    static std::once_flag once;
    std::call_once(once, [] {
        ggml_set_abort_callback(on_ggml_abort);
#if defined(O2G_GGML_CPU_LEVELS)
        ggml_backend_register(cpu_reg_for_level());
#endif
        ggml_backend_load_all();
    });
}

std::unique_ptr<Backends> open_backends(const std::string& device, int threads, bool quiet,
                                        const std::string& precision) {
    if (precision != "exact" && precision != "fast") fail("precision must be exact or fast, not '", precision, "'");
    load_backends();
    ggml_backend_dev_t dev = nullptr;
    std::string names;
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        names += std::string(names.empty() ? "" : ", ") + ggml_backend_dev_name(d);
        if (!device.empty()) {
            if (strcasecmp(ggml_backend_dev_name(d), device.c_str()) == 0) dev = d;
        } else if (!dev && ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_GPU) {
            dev = d;
        }
    }
    if (!dev && !device.empty()) fail("device '", device, "' not found; available: ", names);
    if (!dev) dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev) fail("no ggml device available");
    auto b = std::make_unique<Backends>();
    set_device_precision(dev, precision);
    b->precision = precision;
    b->main = ggml_backend_dev_init(dev, nullptr);
    if (!b->main) fail("could not start device '", ggml_backend_dev_name(dev), "'");
    b->description = std::string(ggml_backend_dev_name(dev)) + " (" + ggml_backend_dev_description(dev) + ")";
    b->threads = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
    if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) {
        set_backend_threads(b->main, b->threads);
        if (getenv("ONNX2GGML_NO_BLAS") == nullptr)
            for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
                ggml_backend_dev_t d = ggml_backend_dev_get(i);
                if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_ACCEL) continue;
                if (ggml_backend_t a = ggml_backend_dev_init(d, nullptr)) {
                    set_backend_threads(a, b->threads);
                    b->accel = a;
                    b->description += " + " + std::string(ggml_backend_dev_name(d));
                    break;
                }
            }
    } else {
        b->cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
        if (b->cpu) set_backend_threads(b->cpu, b->threads);
    }
    if (!quiet)
        fprintf(stderr, "onnx2ggml: device %s, %d threads, precision %s%s%s\n", b->description.c_str(), b->threads,
                precision.c_str(), b->is_cpu() ? ", CPU " : "", b->is_cpu() ? cpu_code_description().c_str() : "");
    return b;
}


bool is_view_op(const ggml_tensor* t) {
    switch (t->op) {
        case GGML_OP_NONE: case GGML_OP_RESHAPE: case GGML_OP_VIEW: case GGML_OP_PERMUTE: case GGML_OP_TRANSPOSE:
            return true;
        default:
            return false;
    }
}

ggml_backend_sched_t new_scheduler(std::vector<ggml_backend_t> bk, ggml_cgraph* graph) {
    std::set<const ggml_tensor*> tensors;
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) {
        const ggml_tensor* n = ggml_graph_node(graph, i);
        tensors.insert(n);
        if (n->view_src) tensors.insert(n->view_src);
        for (const ggml_tensor* s : n->src)
            if (s) tensors.insert(s);
    }
    // Twice the graph's tensors: segments of it add one stand-in per tensor they carry over.
    size_t size = 2 * tensors.size() + 64;
    ggml_backend_sched_t sched = ggml_backend_sched_new(bk.data(), nullptr, int(bk.size()), size, false, true);
    if (!sched) fail("out of memory creating the graph's scheduler");
    return sched;
}

void place_inputs_on_main(ggml_backend_sched_t sched, ggml_cgraph* graph, const Backends& b) {
    // The scheduler would keep graph inputs and uploaded constants in CPU memory, and the views of them on the
    // CPU; on the device they are copied there once per run instead, and no node runs on the CPU.
    if (b.is_cpu()) return;
    // An RPC server would call our CPU kernels' function pointers in its own process: they run here instead (the
    // portable path leaves none in the models it covers; warn_fallback names any that remain).
    const bool rpc = b.cpu && is_rpc_device(ggml_backend_get_device(b.main));
    std::set<ggml_tensor*> seen;
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) {
        ggml_tensor* n = ggml_graph_node(graph, i);
        if (rpc && (n->op == GGML_OP_CUSTOM || n->op == GGML_OP_MAP_CUSTOM1 || n->op == GGML_OP_MAP_CUSTOM2 ||
                    n->op == GGML_OP_MAP_CUSTOM3))
            ggml_backend_sched_set_tensor_backend(sched, n, b.cpu);
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            ggml_tensor* x = n->src[s];
            if (x && !x->buffer && !x->view_src && x->op == GGML_OP_NONE && seen.insert(x).second)
                ggml_backend_sched_set_tensor_backend(sched, x, b.main);
        }
    }
}

std::vector<onnx2ggml::BackendShare> placement(ggml_backend_sched_t sched, ggml_cgraph* graph, const Backends& b,
                                                int& splits) {
    std::vector<onnx2ggml::BackendShare> shares;
    std::map<ggml_backend_t, size_t> at;
    for (ggml_backend_t be : {b.main, b.accel, b.cpu}) {
        if (!be || at.count(be)) continue;
        at[be] = shares.size();
        shares.push_back({ggml_backend_name(be)});
    }
    std::set<std::pair<const ggml_tensor*, ggml_backend_t>> copied;
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) {
        ggml_tensor* n = ggml_graph_node(graph, i);
        ggml_backend_t be = ggml_backend_sched_get_tensor_backend(sched, n);
        if (!be || !at.count(be)) continue;
        auto& s = shares[at[be]];
        s.nodes++;
        if (!is_view_op(n)) s.compute_nodes++;
        for (int k = 0; k < GGML_MAX_SRC; k++) {  // inputs that live on another backend are copied in
            const ggml_tensor* x = n->src[k];
            if (!x || is_view_op(n)) continue;
            while (x->view_src) x = x->view_src;
            ggml_backend_t from = ggml_backend_sched_get_tensor_backend(sched, const_cast<ggml_tensor*>(x));
            if (from && from != be && copied.insert({x, be}).second) s.copy_mb += double(ggml_nbytes(x)) / 1048576.0;
        }
    }
    for (auto& [be, i] : at) shares[i].buffer_bytes = ggml_backend_sched_get_buffer_size(sched, be);
    splits = ggml_backend_sched_get_n_splits(sched);
    return shares;
}

void warn_fallback(const std::vector<onnx2ggml::BackendShare>& shares, ggml_backend_sched_t sched,
                   ggml_cgraph* graph, const Backends& b) {
    if (!b.cpu) return;
    std::map<std::string, int> ops;
    int n = 0;
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) {
        ggml_tensor* t = ggml_graph_node(graph, i);
        if (ggml_backend_sched_get_tensor_backend(sched, t) != b.cpu || is_view_op(t)) continue;
        ops[ggml_op_desc(t)]++;
        n++;
    }
    if (n == 0) return;
    std::string list;
    for (auto& [op, k] : ops) list += " " + op + " x" + std::to_string(k);
    double mb = 0;
    for (auto& s : shares) mb += s.copy_mb;
    fprintf(stderr, "onnx2ggml: warning: %d of %d ggml nodes compute on the CPU, not %s (%.1f MB copied per run):%s\n",
            n, ggml_graph_n_nodes(graph), b.description.c_str(), mb, list.c_str());
}

}  // namespace o2g
