// The device_memory budget: which weights a graph brings onto the device, and a placement that copies in the rest.
#include "lib/device_budget.h"

#include <array>
#include <map>
#include <cstdio>
#include <set>
#include <vector>

#include "common/error.h"
#include "lib/host_util.h"

namespace onnx2ggml {

namespace {

using Srcs = std::map<ggml_tensor*, std::array<ggml_tensor*, GGML_MAX_SRC>>;

// A weight (or a view of one) in a buffer the device cannot read: host memory.
bool host_weight(const ggml_tensor* t, ggml_backend_t device) {
    const ggml_tensor* r = t->view_src ? t->view_src : t;
    return r->buffer && ggml_backend_buffer_get_usage(r->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS &&
           !ggml_backend_supports_buft(device, ggml_backend_buffer_get_type(r->buffer));
}

template <typename F>
void each_tensor(ggml_cgraph* g, F f) {  // nodes and their sources
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        ggml_tensor* n = ggml_graph_node(g, i);
        f(n);
        for (ggml_tensor* s : n->src)
            if (s) f(s);
    }
}

// Views of weights take their weight's buffer now (ggml-alloc would do it later): the scheduler then sees them as
// weights and starts a new split at each node that reads a host one, so a split holds only its own weights' copies.
// A view made before its weight moved to the device is pointed there again.
void bind_weight_views(ggml_cgraph* g) {
    each_tensor(g, [](ggml_tensor* t) {
        ggml_tensor* r = t->view_src;
        if (!r || !r->buffer || ggml_backend_buffer_get_usage(r->buffer) != GGML_BACKEND_BUFFER_USAGE_WEIGHTS) return;
        if (t->buffer == r->buffer && t->data == static_cast<char*>(r->data) + t->view_offs) return;
        t->buffer = nullptr;
        O2G_CHECK(ggml_backend_view_init(t) == GGML_STATUS_SUCCESS, "could not place a view of weight '",
                  ggml_get_name(r), "'");
    });
}

// Graph inputs and constants on the device (as without a budget), and every node reading a host weight too: the
// scheduler would run it on the CPU, beside its weight.
void place(ggml_backend_sched_t sched, ggml_cgraph* g, const o2g::Backends& b) {
    o2g::place_inputs_on_main(sched, g, b);
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        ggml_tensor* n = ggml_graph_node(g, i);
        if (o2g::is_view_op(n) || !ggml_backend_supports_op(b.main, n)) continue;
        for (const ggml_tensor* s : n->src)
            if (s && host_weight(s, b.main)) {
                ggml_backend_sched_set_tensor_backend(sched, n, b.main);
                break;
            }
    }
}

// The scheduler replaces the sources it copies by their copies in the graph itself (and a backend may reorder the
// nodes of a split): a measurement must not leave them there, or the real split would copy copies.
Srcs save_srcs(ggml_cgraph* g) {
    Srcs s;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        ggml_tensor* n = ggml_graph_node(g, i);
        for (int k = 0; k < GGML_MAX_SRC; k++) s[n][size_t(k)] = n->src[k];
    }
    return s;
}
void restore_srcs(const Srcs& s) {
    for (const auto& [n, src] : s)
        for (int k = 0; k < GGML_MAX_SRC; k++) n->src[k] = src[size_t(k)];
}


// Weights moved to the device by one try, with where they were: a try that overshoots the budget is undone.
struct Moved {
    std::vector<std::pair<ggml_tensor*, std::pair<ggml_backend_buffer_t, void*>>> from;
    std::vector<ggml_backend_buffer_t> buffers;
    size_t bytes = 0;
};

// Moves `ts` into new device buffers; their host copies stay where they were.
Moved move_to_device(const WeightHome& w, const std::vector<ggml_tensor*>& ts) {
    Moved m;
    std::map<const ggml_tensor*, const void*> was;
    for (ggml_tensor* t : ts) {
        m.from.push_back({t, {t->buffer, t->data}});
        was[t] = t->data;
        t->buffer = nullptr;
        t->data = nullptr;
    }
    m.bytes = place_weights(w.buft, ts, [&](const ggml_tensor* t) { return was.at(t); }, m.buffers);
    return m;
}

// Undoes ggml-alloc's placement of the graph's tensors (it keeps a tensor that already has an address where it is,
// so a second allocation would overlap the first one's).
void unplace(ggml_cgraph* g) {
    each_tensor(g, [](ggml_tensor* t) {
        const ggml_tensor* r = t->view_src ? t->view_src : t;
        if (!t->buffer || (r->buffer && ggml_backend_buffer_get_usage(r->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS))
            return;
        t->buffer = nullptr;
        t->data = nullptr;
    });
}

void move_back(Moved& m) {
    for (auto& [t, was] : m.from) {
        t->buffer = was.first;
        t->data = was.second;
    }
    for (ggml_backend_buffer_t buf : m.buffers) ggml_backend_buffer_free(buf);
    m = Moved();
}

}  // namespace

std::vector<ggml_tensor*> tensors_read(ggml_cgraph* g, const std::function<bool(const ggml_tensor*)>& pick) {
    std::vector<ggml_tensor*> out;
    std::set<ggml_tensor*> seen;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++)
        for (ggml_tensor* s : ggml_graph_node(g, i)->src) {
            if (s && s->view_src) s = s->view_src;  // (ggml makes a view's source the tensor that holds the data)
            if (s && pick(s) && seen.insert(s).second) out.push_back(s);
        }
    return out;
}

size_t place_weights(ggml_backend_buffer_type_t buft, const std::vector<ggml_tensor*>& ts,
                     const std::function<const void*(const ggml_tensor*)>& bytes,
                     std::vector<ggml_backend_buffer_t>& owned) {
    const size_t max = ggml_backend_buft_get_max_size(buft), align = ggml_backend_buft_get_alignment(buft);
    auto padded = [&](ggml_tensor* t) {
        return (ggml_backend_buft_get_alloc_size(buft, t) + align - 1) / align * align;
    };
    size_t all = 0;
    for (size_t i = 0; i < ts.size();) {
        size_t j = i, total = 0;
        while (j < ts.size() && (j == i || total + padded(ts[j]) <= max)) total += padded(ts[j++]);
        ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, total);
        O2G_CHECK(buf, "could not allocate ", bytes_str(double(total)), " of ", ggml_backend_buft_name(buft),
                  " memory for the weights");
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        owned.push_back(buf);
        all += total;
        char* at = static_cast<char*>(ggml_backend_buffer_get_base(buf));
        for (; i < j; i++) {
            ggml_tensor* t = ts[i];
            O2G_CHECK(ggml_backend_tensor_alloc(buf, t, at) == GGML_STATUS_SUCCESS, "could not place weight '",
                      ggml_get_name(t), "' in ", ggml_backend_buft_name(buft), " memory");
            ggml_backend_tensor_set(t, bytes(t), 0, ggml_nbytes(t));
            at += padded(t);
        }
    }
    return all;
}

size_t DeviceBudget::allocate(ggml_backend_sched_t sched, ggml_cgraph* graph, const WeightHome& w, const o2g::Backends& b,
                              size_t others, const std::string& path, bool quiet, size_t& compute,
                              std::unique_ptr<Segments>& segs, const Segments::NewSched& fresh, bool may_shrink) {
    bind_weight_views(graph);
    // Measured with every weight it reads on the host: the copies of a split's weights are part of it.
    const Srcs srcs = save_srcs(graph);
    place(sched, graph, b);
    O2G_CHECK(ggml_backend_sched_reserve(sched, graph), path, ": could not allocate the graph's device memory");
    const size_t measured = ggml_backend_sched_get_buffer_size(sched, b.main);
    ggml_backend_sched_reset(sched);
    restore_srcs(srcs);

    const size_t fixed = others + resident;
    if (measured + fixed > limit) {  // the compute buffer alone does not fit: segments that do, if any
        const size_t left = limit > fixed ? limit - fixed : 0;
        segs = Segments::plan(graph, b, left, fresh, [&b](ggml_backend_sched_t s, ggml_cgraph* g) { place(s, g, b); });
        if (!segs && may_shrink) throw BudgetTooSmall();
        if (!quiet && segs)
            fprintf(stderr, "onnx2ggml: %s: the graph's compute buffer needs %s, device_memory leaves %s: it runs in "
                    "%d segments (%s carried through host memory per run)\n", path.c_str(),
                    bytes_str(double(measured)).c_str(), bytes_str(double(left)).c_str(), segs->count(),
                    bytes_str(double(segs->carried_bytes())).c_str());
        if (!quiet && !segs)
            fprintf(stderr, "onnx2ggml: warning: %s: device_memory is %s, but the graph's compute buffer needs %s (%s "
                    "more held by weights and other graphs), and no cut into 64 segments or fewer fits; it is "
                    "allocated anyway, and the weights it reads stay in host memory\n", path.c_str(),
                    bytes_str(double(limit)).c_str(), bytes_str(double(measured)).c_str(),
                    bytes_str(double(fixed)).c_str());
    }
    const size_t base = segs ? segs->measured() + segs->leaf_bytes() : measured;
    size_t room = base + fixed < limit ? limit - base - fixed : 0;
    // Laid out again once weights have moved, the compute buffer may come out a little larger than measured: a try
    // that overshoots is undone and made again with that much less room.
    Moved moved;
    for (int attempt = 0;; attempt++) {
        std::vector<ggml_tensor*> moving;
        size_t left = room;
        for (ggml_tensor* t : tensors_read(graph, [&](const ggml_tensor* t) { return host_weight(t, b.main); })) {
            const size_t n = ggml_backend_buft_get_alloc_size(w.buft, t);
            if (n > left) continue;
            moving.push_back(t);
            left -= n;
        }
        moved = move_to_device(w, moving);
        bind_weight_views(graph);
        if (segs) {
            compute = segs->measure() + segs->leaf_bytes();
        } else {
            place(sched, graph, b);
            O2G_CHECK(ggml_backend_sched_alloc_graph(sched, graph), path, ": could not allocate the graph's device memory");
            compute = ggml_backend_sched_get_buffer_size(sched, b.main);
        }
        const size_t held = compute + fixed + moved.bytes;
        if (held <= limit || moved.from.empty() || attempt == 3) break;
        if (!segs) {
            ggml_backend_sched_reset(sched);
            restore_srcs(srcs);
            unplace(graph);
        }
        move_back(moved);
        room = room > held - limit ? room - (held - limit) : 0;
    }
    resident += moved.bytes;
    for (ggml_backend_buffer_t buf : moved.buffers) w.buffers->push_back(buf);
    if (segs) return 0;  // Segments::lay_out counts the copies
    // The sources the scheduler replaced by a copy: each copy of a host weight is made once per run.
    std::set<const ggml_tensor*> copies;
    size_t copied = 0;
    for (const auto& [n, src] : srcs)
        for (int k = 0; k < GGML_MAX_SRC; k++) {
            const ggml_tensor* was = src[size_t(k)];
            if (was && n->src[k] != was && host_weight(was, b.main) && copies.insert(n->src[k]).second)
                copied += ggml_nbytes(was);
        }
    return copied;
}

size_t DeviceBudget::host_bytes(const std::vector<ggml_backend_buffer_t>& buffers, ggml_backend_t device) const {
    size_t host = 0;
    for (ggml_backend_buffer_t buf : buffers)
        if (ggml_backend_buffer_get_usage(buf) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS &&
            !ggml_backend_supports_buft(device, ggml_backend_buffer_get_type(buf)))
            host += ggml_backend_buffer_get_size(buf);
    return host > resident ? host - resident : 0;
}

}  // namespace onnx2ggml
