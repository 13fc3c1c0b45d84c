// Graphs run in segments under a device_memory budget: where to cut, how a cut is wired, and a run.
#include "lib/segments.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>

#include "common/error.h"
#include "ggml-alloc.h"

namespace onnx2ggml {

namespace {

ggml_tensor* root(ggml_tensor* t) { return t->view_src ? t->view_src : t; }

// Per cut position c (between nodes c-1 and c): the bytes of tensors made before it and read after it, and whether
// a cut there would split a node from the tensor it writes in place (a later reader of that tensor would see it
// unwritten).
struct Sweep {
    int n = 0;
    std::vector<double> cross;
    std::vector<int> forbidden;

    explicit Sweep(ggml_cgraph* g) : n(ggml_graph_n_nodes(g)), cross(size_t(n) + 2), forbidden(size_t(n) + 2) {
        std::unordered_map<const ggml_tensor*, int> at;
        for (int i = 0; i < n; i++) at[ggml_graph_node(g, i)] = i;
        std::vector<int> last(size_t(n), -1);
        for (int i = 0; i < n; i++) {
            ggml_tensor* t = ggml_graph_node(g, i);
            for (ggml_tensor* s : t->src) {
                auto it = s ? at.find(root(s)) : at.end();
                if (it != at.end()) last[size_t(it->second)] = std::max(last[size_t(it->second)], i);
            }
            if (t->flags & GGML_TENSOR_FLAG_OUTPUT) last[size_t(i)] = n;
            auto w = t->view_src && !o2g::is_view_op(t) ? at.find(t->view_src) : at.end();
            if (w != at.end()) forbidden[size_t(w->second) + 1]++, forbidden[size_t(i) + 1]--;
        }
        for (int p = 0; p < n; p++)
            if (last[size_t(p)] > p) {
                const double bytes = double(ggml_nbytes(ggml_graph_node(g, p)));
                cross[size_t(p) + 1] += bytes;
                cross[size_t(last[size_t(p)]) + 1] -= bytes;
            }
        for (size_t c = 1; c < cross.size(); c++) cross[c] += cross[c - 1], forbidden[c] += forbidden[c - 1];
    }

    // k segments of about equal node counts, each cut where the least crosses it near its ideal place.
    std::vector<int> bounds(int k) const {
        std::vector<int> b = {0};
        const int w = std::max(1, n / (4 * k));
        for (int j = 1; j < k; j++) {
            const int ideal = int(int64_t(j) * n / k);
            int best = -1;
            for (int c = std::max(b.back() + 1, ideal - w); c <= std::min(n - 1, ideal + w); c++)
                if (!forbidden[size_t(c)] && (best < 0 || cross[size_t(c)] < cross[size_t(best)])) best = c;
            if (best < 0) return {};
            b.push_back(best);
        }
        b.push_back(n);
        return b;
    }
};

// Tensors a segment's graph holds: its nodes and everything they reach (views of weights and inputs included).
size_t reach(const std::vector<ggml_tensor*>& nodes) {
    std::set<const ggml_tensor*> seen;
    std::vector<const ggml_tensor*> stack(nodes.begin(), nodes.end());
    while (!stack.empty()) {
        const ggml_tensor* t = stack.back();
        stack.pop_back();
        if (!seen.insert(t).second) continue;
        for (const ggml_tensor* s : t->src)
            if (s) stack.push_back(s);
        if (t->view_src) stack.push_back(t->view_src);
    }
    return seen.size();
}

}  // namespace

std::unique_ptr<Segments> Segments::plan(ggml_cgraph* g, const o2g::Backends& b, size_t room, const NewSched& fresh,
                                         const Place& place) {
    std::unique_ptr<Segments> s(new Segments(b, fresh, place));
    // Inputs and constants are read by several segments: one device buffer of their own, set once per run.
    std::vector<ggml_tensor*> leaves;
    std::set<ggml_tensor*> seen;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++)
        for (ggml_tensor* x : ggml_graph_node(g, i)->src)
            if (x && !x->buffer && !x->view_src && x->op == GGML_OP_NONE && seen.insert(x).second) leaves.push_back(x);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(b.main);
    const size_t align = ggml_backend_buft_get_alignment(buft);
    size_t total = 0;
    for (ggml_tensor* t : leaves) total += (ggml_backend_buft_get_alloc_size(buft, t) + align - 1) / align * align;
    if (total) {
        s->leaves_ = ggml_backend_buft_alloc_buffer(buft, total);
        if (!s->leaves_) return nullptr;
        ggml_tallocr ta = ggml_tallocr_new(s->leaves_);
        for (ggml_tensor* t : leaves) O2G_CHECK(ggml_tallocr_alloc(&ta, t) == GGML_STATUS_SUCCESS, "could not place '",
                                                ggml_get_name(t), "' on the device");
    }
    const Sweep sweep(g);
    for (int k : {2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64}) {
        if (sweep.n < 2 * k) break;
        const std::vector<int> bounds = sweep.bounds(k);
        if (bounds.empty()) continue;
        if (s->cut(g, bounds) && (s->measured_ = s->measure()) + s->leaf_bytes() <= room) return s;
        s->undo();
    }
    for (ggml_tensor* t : leaves) t->buffer = nullptr, t->data = nullptr;
    return nullptr;
}

// Rewires the nodes of each segment that read an earlier segment's tensor to a leaf of their own (a view of one for
// a view), and makes one graph per segment.
bool Segments::cut(ggml_cgraph* g, const std::vector<int>& bounds) {
    const int n = ggml_graph_n_nodes(g), k = int(bounds.size()) - 1;
    std::unordered_map<const ggml_tensor*, int> seg_of;
    std::unordered_map<const ggml_tensor*, ggml_tensor*> was_root;  // a node's view source before any rewiring
    size_t refs = 0;
    for (int s = 0; s < k; s++)
        for (int i = bounds[size_t(s)]; i < bounds[size_t(s) + 1]; i++) {
            ggml_tensor* t = ggml_graph_node(g, i);
            seg_of[t] = s;
            was_srcs_.push_back({t, std::vector<ggml_tensor*>(t->src, t->src + GGML_MAX_SRC)});
            was_view_.push_back({t, {t->view_src, t->flags}});
            was_root[t] = root(t);
            for (ggml_tensor* x : t->src) refs += x != nullptr;
        }
    ctx_ = ggml_init({ggml_tensor_overhead() * (2 * refs + 16), nullptr, true});
    O2G_CHECK(ctx_, "out of memory cutting a graph into segments");
    segs_.assign(size_t(k), Seg());
    std::map<std::pair<int, const ggml_tensor*>, ggml_tensor*> leaf_of;
    std::set<const ggml_tensor*> saved;
    auto save = [&](ggml_tensor* r) {
        if (saved.insert(r).second) segs_[size_t(seg_of[r])].saves.push_back(r);
    };
    auto leaf = [&](int s, ggml_tensor* r) {
        ggml_tensor*& l = leaf_of[{s, r}];
        if (!l) {
            l = ggml_new_tensor(ctx_, r->type, GGML_MAX_DIMS, r->ne);
            std::memcpy(l->nb, r->nb, sizeof(l->nb));
            ggml_format_name(l, "seg%d_in", s);
            ggml_set_input(l);  // allocated first, so no node of the segment overwrites it before it is read
            segs_[size_t(s)].loads.push_back({l, r});
            save(r);
        }
        return l;
    };
    for (int i = 0; i < n; i++) {
        ggml_tensor* t = ggml_graph_node(g, i);
        const int s = seg_of[t];
        if ((t->flags & GGML_TENSOR_FLAG_OUTPUT) && s < k - 1) save(t);
        for (ggml_tensor*& x : t->src) {
            if (!x) continue;
            auto w = was_root.find(x);
            ggml_tensor* r = w != was_root.end() ? w->second : root(x);
            auto it = seg_of.find(r);
            if (it == seg_of.end() || it->second == s) continue;
            if (x->type != r->type) return false;
            ggml_tensor* l = leaf(s, r);
            if (x != r) {
                ggml_tensor* v = ggml_view_4d(ctx_, l, x->ne[0], x->ne[1], x->ne[2], x->ne[3], x->nb[1], x->nb[2],
                                              x->nb[3], x->view_offs);
                std::memcpy(v->nb, x->nb, sizeof(v->nb));
                l = v;
            }
            x = l;
        }
        ggml_tensor* r = was_root[t];
        auto it = r != t ? seg_of.find(r) : seg_of.end();
        if (it != seg_of.end() && it->second != s) t->view_src = leaf(s, r);
    }
    for (Seg& sg : segs_)
        for (ggml_tensor* r : sg.saves) ggml_set_output(r);  // kept to the end of its segment
    size_t gbytes = 0;
    std::vector<std::vector<ggml_tensor*>> nodes(static_cast<size_t>(k));
    for (int s = 0; s < k; s++) {
        for (int i = bounds[size_t(s)]; i < bounds[size_t(s) + 1]; i++) nodes[size_t(s)].push_back(ggml_graph_node(g, i));
        gbytes += ggml_graph_overhead_custom(reach(nodes[size_t(s)]) + 8, false);
    }
    gctx_ = ggml_init({gbytes + 64 * size_t(k), nullptr, true});
    O2G_CHECK(gctx_, "out of memory cutting a graph into segments");
    for (int s = 0; s < k; s++) {
        Seg& sg = segs_[size_t(s)];
        sg.graph = ggml_new_graph_custom(gctx_, reach(nodes[size_t(s)]) + 8, false);
        for (ggml_tensor* t : nodes[size_t(s)]) ggml_build_forward_expand(sg.graph, t);
        for (int i = 0; i < ggml_graph_n_nodes(sg.graph); i++) {
            ggml_tensor* t = ggml_graph_node(sg.graph, i);
            sg.srcs.push_back({t, std::vector<ggml_tensor*>(t->src, t->src + GGML_MAX_SRC)});
        }
    }
    return true;
}

void Segments::undo() {
    for (auto& [t, src] : was_srcs_) std::copy(src.begin(), src.end(), t->src);
    for (auto& [t, v] : was_view_) t->view_src = v.first, t->flags = v.second;
    was_srcs_.clear();
    was_view_.clear();
    segs_.clear();
    held_.clear();
    if (gctx_) ggml_free(gctx_);
    if (ctx_) ggml_free(ctx_);
    gctx_ = ctx_ = nullptr;
}

Segments::~Segments() {
    if (gctx_) ggml_free(gctx_);
    if (ctx_) ggml_free(ctx_);
    if (leaves_) ggml_backend_buffer_free(leaves_);
}

// The segment's sources as cut, and its tensors unallocated: ggml-alloc keeps a tensor that has an address where it
// is, and that address is from the segment's last layout (the shared buffer holds another segment now, or has grown).
// Weights, the shared leaves and views of them keep theirs.
void Segments::restore(Seg& s) const {
    for (auto& [t, src] : s.srcs) std::copy(src.begin(), src.end(), t->src);
    auto clear = [this](ggml_tensor* t) {
        const ggml_tensor* r = t->view_src ? t->view_src : t;
        if (!t->buffer || r->buffer == leaves_ ||
            (r->buffer && ggml_backend_buffer_get_usage(r->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS))
            return;
        t->buffer = nullptr;
        t->data = nullptr;
    };
    for (auto& [t, src] : s.srcs) {
        clear(t);
        for (ggml_tensor* x : src)
            if (x) clear(x);
    }
}

size_t Segments::measure() {
    ggml_backend_sched_t sched = fresh_();
    bool ok = true;
    for (Seg& s : segs_) {
        restore(s);
        place_(sched, s.graph);
        ok = ok && ggml_backend_sched_reserve(sched, s.graph);
        ggml_backend_sched_reset(sched);
        restore(s);
    }
    const size_t bytes = ok ? ggml_backend_sched_get_buffer_size(sched, b_.main) : SIZE_MAX;
    ggml_backend_sched_free(sched);
    return bytes;
}

std::vector<BackendShare> Segments::lay_out(ggml_backend_sched_t sched, int& splits, size_t& copied, bool warn) {
    std::vector<BackendShare> all;
    splits = 0;
    copied = 0;
    for (Seg& s : segs_) {
        ggml_backend_sched_reset(sched);
        restore(s);
        place_(sched, s.graph);
        O2G_CHECK(ggml_backend_sched_alloc_graph(sched, s.graph), "could not allocate a segment's device memory");
        int n = 0;
        auto shares = o2g::placement(sched, s.graph, b_, n);
        splits += n;
        if (warn) o2g::warn_fallback(shares, sched, s.graph, b_);
        if (all.empty()) all = shares;
        else
            for (size_t i = 0; i < all.size() && i < shares.size(); i++) {
                all[i].nodes += shares[i].nodes;
                all[i].compute_nodes += shares[i].compute_nodes;
                all[i].copy_mb += shares[i].copy_mb;
                all[i].buffer_bytes = std::max(all[i].buffer_bytes, shares[i].buffer_bytes);
            }
        for (const auto& [leaf, r] : s.loads) held_[r].resize(ggml_nbytes(r));
    }
    for (BackendShare& sh : all)
        if (sh.backend == ggml_backend_name(b_.main)) {
            copied = size_t(sh.copy_mb * 1048576.0 + 0.5);
            sh.buffer_bytes += leaf_bytes();  // the device memory the segments hold, shared leaves included
        }
    return all;
}

void Segments::compute(ggml_backend_sched_t sched) {
    for (Seg& s : segs_) {
        ggml_backend_sched_reset(sched);
        restore(s);
        place_(sched, s.graph);
        O2G_CHECK(ggml_backend_sched_alloc_graph(sched, s.graph), "could not allocate a segment's device memory");
        for (const auto& [leaf, r] : s.loads) {
            const std::vector<uint8_t>& h = held_.at(r);
            ggml_backend_tensor_set(leaf, h.data(), 0, h.size());
        }
        O2G_CHECK(ggml_backend_sched_graph_compute(sched, s.graph) == GGML_STATUS_SUCCESS, "graph compute failed");
        for (ggml_tensor* r : s.saves) {
            std::vector<uint8_t>& h = held_[r];
            h.resize(ggml_nbytes(r));
            ggml_backend_tensor_get(r, h.data(), 0, h.size());
        }
    }
}

bool Segments::read(const ggml_tensor* t, void* dst, size_t bytes) const {
    auto it = held_.find(t);
    if (it == held_.end() || it->second.size() < bytes) return false;
    std::memcpy(dst, it->second.data(), bytes);
    return true;
}

size_t Segments::leaf_bytes() const { return leaves_ ? ggml_backend_buffer_get_size(leaves_) : 0; }

size_t Segments::carried_bytes() const {
    size_t n = 0;
    for (const Seg& s : segs_) {
        for (const ggml_tensor* r : s.saves) n += ggml_nbytes(r);
        for (const auto& [leaf, r] : s.loads) n += ggml_nbytes(leaf);
    }
    return n;
}

}  // namespace onnx2ggml
