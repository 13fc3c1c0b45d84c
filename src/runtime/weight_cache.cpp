// WeightCache: the session's weights on the device, read in place from the file mapping where they can be, and
// their derived forms (packed panels, transposes, reduced types), made once.
#include <algorithm>
#include <set>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/platform.h"
#include "ggml-cpu.h"
#include "lib/device_budget.h"
#include "lib/host_util.h"
#include "runtime/builder.h"
#include "runtime/load_progress.h"

namespace onnx2ggml {

// Host data converted to the device element type (F32 or I32).
ggml_tensor* WeightCache::get(const std::string& key, const HostTensor& h, ggml_type type) {
    auto it = tensors.find(key);
    if (it != tensors.end()) return it->second;
    if (!pending_ctx) {
        ggml_init_params p = {ggml_tensor_overhead() * 4096, nullptr, true};
        pending_ctx = ggml_init(p);
    }
    int64_t ne[4];
    shape_to_ne(h.shape, ne);
    int64_t count = 1;  // ggml asserts that the dims past 0 multiply within int64, even for an empty tensor
    for (int64_t n : ne)
        if (n > 1 && __builtin_mul_overflow(count, n, &count))
            throw Error("'" + key + "' " + shape_str(h.shape) + " has more elements than ggml holds");
    const bool same = (type == GGML_TYPE_F32 && h.dtype == DType::FLOAT) || (type == GGML_TYPE_F16 && h.dtype == DType::FLOAT16);
    if (zero_copy && same && h.keep && h.nbytes > 0 &&
        reinterpret_cast<uintptr_t>(h.data) % 32 == 0) {  // ggml's tensor alignment
        // No second copy: a CPU buffer wraps the mmapped (or pass-owned) bytes directly.
        return wrap_in_place(key, h, type, h.data);
    }
    if (zero_copy && type == GGML_TYPE_F32 && (h.dtype == DType::FLOAT16 || h.dtype == DType::BFLOAT16) && h.nbytes > 0) {
        if (!lazy_ctx) {
            ggml_init_params lp = {ggml_tensor_overhead() * 65536, nullptr, true};
            lazy_ctx = ggml_init(lp);
        }
        ggml_tensor* t = ggml_new_tensor(lazy_ctx, type, 4, ne);
        ggml_set_name(t, key.c_str());
        tensors[key] = t;
        sources[t] = {key, h};
        lazy[t] = h;
        return t;
    }
    ggml_tensor* t = ggml_new_tensor(pending_ctx, type, 4, ne);
    ggml_set_name(t, key.c_str());
    tensors[key] = t;
    sources[t] = {key, h};
    pending.emplace_back(t, h);
    if (pending.size() >= 4000) commit();  // context capacity
    return t;
}

void drop_pages(const uint8_t* p, size_t n) {
    uintptr_t page = uintptr_t(platform::page_size());
    uintptr_t b = (uintptr_t(p) + page - 1) & ~(page - 1), e = (uintptr_t(p) + n) & ~(page - 1);
    if (e > b) platform::advise_dont_need(reinterpret_cast<void*>(b), e - b);
}

std::shared_ptr<void> HugeArena::take(size_t n) {
    n = (n + 63) & ~size_t(63);
    O2G_CHECK(n <= CHUNK, "internal: a ", bytes_str(double(n)), " weight in a huge-page chunk");
    if (!chunk || used + n > CHUNK) {
        void* p = platform::aligned_alloc_bytes(HUGE_PAGE, CHUNK);
        O2G_CHECK(p, "out of memory for a ", bytes_str(double(CHUNK)),
                  " chunk of derived weights");
        platform::advise_huge_pages(p, CHUNK);  // a hint: failure is harmless; untouched pages stay unmapped
        chunk = std::shared_ptr<void>(p, platform::aligned_free);
        used = 0;
    }
    std::shared_ptr<void> part(chunk, static_cast<uint8_t*>(chunk.get()) + used);  // keeps the chunk alive
    used += n;
    return part;
}

namespace {

// Host memory for a derived weight: 64-byte aligned so the CPU buffer wraps it in place (no second copy in a
// ggml buffer), and not zero-filled (the transform writes every element). The kernels stream these from memory every
// run, so they sit on huge pages where possible: a big one on its own, mid-size ones (a 768x768 projection, 2.4 MB)
// packed into shared chunks. On 4 KiB pages the text encoder's projections ran 15 % slower (TLB misses).
// nbytes: a ggml block type's size (q8_0), given as opaque bytes (dtype UINT8); 0: the dtype's.
HostTensor aligned_host(const int64_t ne[4], DType dtype, HugeArena& arena, size_t nbytes = 0) {
    HostTensor h;
    h.dtype = dtype;
    h.shape = {ne[3], ne[2], ne[1], ne[0]};
    if (nbytes) check_host_size({int64_t(nbytes)}, 1, "derived weight");
    else check_host_size(h.shape, dtype_size(dtype), "derived weight");
    h.nbytes = nbytes ? nbytes : size_t(shape_numel(h.shape)) * dtype_size(dtype);
    const size_t huge = HugeArena::HUGE_PAGE;
    if (h.nbytes >= HugeArena::MIN && h.nbytes <= HugeArena::CHUNK / 4) {
        h.keep = arena.take(h.nbytes);
        h.data = static_cast<const uint8_t*>(h.keep.get());
        return h;
    }
    const size_t align = h.nbytes >= 2 * huge ? huge : 64;
    void* p = platform::aligned_alloc_bytes(align, std::max<size_t>(h.nbytes, 64));
    O2G_CHECK(p, "out of memory for a ",
              bytes_str(double(h.nbytes)), " derived weight");
    if (align == huge) platform::advise_huge_pages(p, h.nbytes & ~(huge - 1));  // a hint: failure is harmless
    h.keep = std::shared_ptr<void>(p, platform::aligned_free);
    h.data = static_cast<const uint8_t*>(p);
    return h;
}

}  // namespace

ggml_tensor* WeightCache::derived(const ggml_tensor* w, const std::string& kind, ggml_type type, const int64_t ne[4],
                                  const std::function<void(const float*, float*)>& make) {
    auto src = sources.find(w);
    O2G_CHECK(src != sources.end(), "internal: '", ggml_get_name(w), "' is not a weight");
    const auto& [name, h] = src->second;
    std::string key = name + "#" + kind + (type == GGML_TYPE_F32 ? "" : std::string("#") + ggml_type_name(type));
    auto it = tensors.find(key);
    if (it != tensors.end()) return it->second;
    HostTensor out = aligned_host(ne, DType::FLOAT, arena);
    // F32 sources are read in place; others (and a derived weight whose host copy went to the device) once
    // converted.
    std::vector<float> f;
    const float* in = reinterpret_cast<const float*>(h.data);
    if (!h.data && h.nbytes) {
        O2G_CHECK(w->type == GGML_TYPE_F32, "internal: the host copy of '", ggml_get_name(w), "' was released");
        f.resize(size_t(ggml_nelements(w)));
        ggml_backend_tensor_get(w, f.data(), 0, f.size() * 4);
        in = f.data();
    } else if (h.dtype != DType::FLOAT || reinterpret_cast<uintptr_t>(h.data) % alignof(float) != 0) {
        f = h.to_f32();
        in = f.data();
    }
    make(in, reinterpret_cast<float*>(out.mut()));
    f = {};
    // The original is often only read for this transform: give its mapped pages back (re-read if needed later).
    if (h.mapped) drop_pages(h.data, h.nbytes);
    if (zero_copy && type == GGML_TYPE_F16) {  // used in place like an f32 form, so no f32 copy waits for commit
        HostTensor half = aligned_host(ne, DType::FLOAT16, arena);
        ggml_fp32_to_fp16_row(reinterpret_cast<const float*>(out.data), reinterpret_cast<ggml_fp16_t*>(half.mut()),
                              ne[0] * ne[1] * ne[2] * ne[3]);
        out = half;
    }
    if (zero_copy && type != GGML_TYPE_F32 && type != GGML_TYPE_F16) {
        // bf16, q8_0: converted straight into the memory the CPU buffer wraps. Through commit() the converted set
        // sat twice in RSS (a heap copy below glibc's mmap threshold, freed but kept, and the buffer).
        const int64_t rows = ne[1] * ne[2] * ne[3];
        HostTensor red = aligned_host(ne, DType::UINT8, arena, ggml_row_size(type, ne[0]) * size_t(rows));
        ggml_quantize_chunk(type, reinterpret_cast<const float*>(out.data), red.mut(), 0, rows, ne[0], nullptr);
        out = HostTensor();  // the f32 form goes now
        ggml_tensor* t = wrap_in_place(key, red, type, red.data);
        sources[t].second.data = nullptr;  // opaque blocks: derived() must not read them as floats
        made.insert(t);
        made_bytes += red.nbytes;
        return t;
    }
    ggml_tensor* t = get(key, out, type);
    made.insert(t);
    if (type != GGML_TYPE_F32 && !pending.empty() && pending.back().first == t) {
        std::vector<uint8_t>& bytes = converted[t] = device_bytes(out, type, key);
        made_bytes += bytes.size();
        pending.back().second = HostTensor();
        sources[t].second.keep.reset();
        sources[t].second.data = nullptr;
    } else {
        made_bytes += out.nbytes;
    }
    return t;
}

void advise_huge_pages(ggml_backend_buffer_t buf) {
    if (!buf || !ggml_backend_buffer_is_host(buf)) return;
    const uintptr_t huge = uintptr_t(2) << 20;
    uintptr_t b = uintptr_t(ggml_backend_buffer_get_base(buf));
    uintptr_t e = b + ggml_backend_buffer_get_size(buf);
    b = (b + huge - 1) & ~(huge - 1);
    e &= ~(huge - 1);
    if (e > b) platform::advise_huge_pages(reinterpret_cast<void*>(b), e - b);  // a hint: failure is harmless
}

ggml_type WeightCache::source_type(const ggml_tensor* w) {
    auto it = sources.find(w);
    return keep_f16 && it != sources.end() && it->second.second.dtype == DType::FLOAT16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
}

size_t WeightCache::unread_bytes(ggml_cgraph* g) const {
    const auto all = tensors_read(g, [](const ggml_tensor*) { return true; });
    const std::set<const ggml_tensor*> read(all.begin(), all.end());
    size_t n = 0;
    for (const ggml_tensor* t : made)
        if (!read.count(t)) n += ggml_nbytes(t);
    return n;
}

ggml_tensor* WeightCache::f16_source(const ggml_tensor* w) {
    auto it = sources.find(w);
    if (!zero_copy || it == sources.end() || it->second.second.dtype != DType::FLOAT16) return nullptr;
    const std::string key = it->second.first + "#f16";
    const HostTensor h = it->second.second;  // get() adds to `sources`
    auto done = tensors.find(key);
    if (done != tensors.end()) return done->second;
    const uintptr_t p = reinterpret_cast<uintptr_t>(h.data), base = p & ~uintptr_t(31);
#if defined(__x86_64__) || defined(__aarch64__)
    const bool odd_ok = true;  // 16-bit loads at odd addresses are plain loads there
#else
    const bool odd_ok = false;
#endif
    if (!h.keep || h.nbytes == 0 || (p % 2 && !odd_ok)) return get(key, h, GGML_TYPE_F16);
    // In place even where the bytes are not aligned (raw_data inside the .onnx sits at any offset): the buffer
    // starts at the 32-byte boundary below them, and get_rows, the one op given this tensor, converts f16 rows
    // with unaligned loads. Only the pages of the rows read are touched.
    return wrap_in_place(key, h, GGML_TYPE_F16, reinterpret_cast<const uint8_t*>(base));
}

// A weight tensor over h's own bytes (no copy), in a CPU buffer that starts at `base` (h.data or below it).
ggml_tensor* WeightCache::wrap_in_place(const std::string& key, const HostTensor& h, ggml_type type,
                                        const uint8_t* base) {
    if (!mapped_ctx) {
        ggml_init_params mp = {ggml_tensor_overhead() * 65536, nullptr, true};
        mapped_ctx = ggml_init(mp);
    }
    int64_t ne[4];
    shape_to_ne(h.shape, ne);
    ggml_tensor* t = ggml_new_tensor(mapped_ctx, type, 4, ne);
    ggml_set_name(t, key.c_str());
    ggml_backend_buffer_t buf = ggml_backend_cpu_buffer_from_ptr(const_cast<uint8_t*>(base),
                                                                 h.nbytes + size_t(h.data - base));
    O2G_CHECK(buf && ggml_backend_tensor_alloc(buf, t, const_cast<uint8_t*>(h.data)) == GGML_STATUS_SUCCESS,
              "could not map weight '", key, "'");
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    buffers.push_back(buf);
    keep.push_back(h.keep);
    tensors[key] = t;
    sources[t] = {key, h};
    return t;
}

void WeightCache::commit(ggml_cgraph* g) {
    // The lazy weights g reads, in one buffer.
    auto used = tensors_read(g, [this](const ggml_tensor* s) {
        return !s->buffer && lazy.count(const_cast<ggml_tensor*>(s));
    });
    if (!used.empty()) {
        const size_t align = ggml_backend_buft_get_alignment(buft);
        size_t total = 0;
        for (ggml_tensor* t : used) total += (ggml_nbytes(t) + align - 1) / align * align;
        ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, total);
        O2G_CHECK(buf, "could not allocate ", bytes_str(double(total)), " for the weights");
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        buffers.push_back(buf);
        uint8_t* base = static_cast<uint8_t*>(ggml_backend_buffer_get_base(buf));
        for (ggml_tensor* t : used) {
            O2G_CHECK(ggml_backend_tensor_alloc(buf, t, base) == GGML_STATUS_SUCCESS, "could not place weight '",
                      ggml_get_name(t), "'");
            base += (ggml_nbytes(t) + align - 1) / align * align;
            // Widened straight into the (host) buffer: a staging copy would double a 150 MB embedding table.
            const HostTensor& h = lazy[t];
            const int64_t n = ggml_nelements(t);
            if (h.dtype == DType::FLOAT16)
                ggml_fp16_to_fp32_row(reinterpret_cast<const ggml_fp16_t*>(h.data), static_cast<float*>(t->data), n);
            else
                ggml_bf16_to_fp32_row(reinterpret_cast<const ggml_bf16_t*>(h.data), static_cast<float*>(t->data), n);
            made_bytes += ggml_nbytes(t);
            if (h.mapped) drop_pages(h.data, h.nbytes);
            lazy.erase(t);
        }
    }
    commit();
}

void WeightCache::commit() {
    if (!pending_ctx) return;
    ggml_backend_buffer_type_t to = host_buft ? host_buft : buft;
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(pending_ctx, to);
    O2G_CHECK(buf || pending.empty(), "could not allocate device memory for the weights");
    if (buf) {
        advise_huge_pages(buf);
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        buffers.push_back(buf);
    }
    size_t total = 0;
    for (auto& [t, h] : pending) total += ggml_nbytes(t);
    LoadProgress shown("weights to " + std::string(ggml_backend_buft_name(to)), total, progress && total >= (64u << 20));
    for (auto& [t, h] : pending) {
        auto done = converted.find(t);
        std::vector<uint8_t> bytes;
        if (done != converted.end()) {
            bytes = std::move(done->second);
            converted.erase(done);
        } else {
            bytes = device_bytes(h, t->type, ggml_get_name(t));
        }
        if (!bytes.empty()) ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
        shown.add(ggml_nbytes(t));
        // Only the device copy is used from now on: the file's pages go back to the kernel, and the host copy
        // of a derived weight is freed (derived() reads the device copy back should it be needed again).
        if (h.mapped) drop_pages(h.data, h.nbytes);
        if (made.count(t)) {
            HostTensor& kept = sources[t].second;
            kept.keep.reset();
            kept.data = nullptr;
        } else made_bytes += bytes.size();  // derived weights were counted when made
    }
    ctxs.push_back(pending_ctx);
    pending_ctx = nullptr;
    pending.clear();
}

double WeightCache::megabytes() const {
    double b = 0;
    for (auto buf : buffers) b += double(ggml_backend_buffer_get_size(buf));
    return b / 1048576.0;
}

WeightCache::~WeightCache() {
    for (auto b : buffers) ggml_backend_buffer_free(b);
    if (mapped_ctx) ggml_free(mapped_ctx);
    for (auto c : ctxs) ggml_free(c);
    if (pending_ctx) ggml_free(pending_ctx);
    if (lazy_ctx) ggml_free(lazy_ctx);
}

// Bytes of the distinct weight tensors a graph reads: originals replaced by a transformed form are not counted,
// though the session still holds their (released) mappings.
double WeightCache::graph_mb(ggml_cgraph* g) {
    // By address within a device buffer (Vulkan's buffers all start at the same made-up address), by address alone
    // in host memory (two tensors may wrap the same mapped bytes).
    std::set<std::pair<const void*, const void*>> seen;
    double bytes = 0;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++)
        for (const ggml_tensor* s : ggml_graph_node(g, i)->src) {
            while (s && s->view_src) s = s->view_src;
            if (!s || !s->buffer || ggml_backend_buffer_get_usage(s->buffer) != GGML_BACKEND_BUFFER_USAGE_WEIGHTS) continue;
            const void* buf = ggml_backend_buffer_is_host(s->buffer) ? nullptr : s->buffer;
            if (seen.insert({buf, s->data}).second) bytes += double(ggml_nbytes(s));
        }
    return bytes / 1048576.0;
}

}  // namespace onnx2ggml
