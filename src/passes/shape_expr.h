// Symbolic shape facts for fusion passes: the rank of a value, and what an int64 shape vector built by
// Shape/Gather/Unsqueeze/Concat/Slice/constants holds element by element. Passes compare shapes by these, not by
// the nodes that built them: Concat(Gather(Shape(x), 0), ..., Gather(Shape(x), 3)) is Shape(x).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "passes/match.h"

namespace onnx2ggml {

// One element of a shape vector: a known integer, dimension `axis` of value `of`, or (of "?") a value only the
// run knows.
struct SymInt {
    int64_t value = 0;
    std::string of;
    int axis = -1;
    bool known() const { return of.empty(); }
    bool is_dim(const std::string& v, int a) const { return of == v && axis == a; }
};

class ShapeFacts {
public:
    // Ranks of all live values are derived here, in graph order, so no lookup recurses through the whole graph.
    explicit ShapeFacts(GraphIndex& g);
    // Rank of v, or -1 when no rule derives it.
    int rank(const std::string& v);
    // The int64/int32 vector (a scalar as one element) v holds; false where it cannot be evaluated.
    bool ints(const std::string& v, std::vector<SymInt>& out);
    // Dimension `axis` of v as a SymInt: its static size when the graph declares one.
    SymInt dim(const std::string& v, int axis);
    // True if a Reshape (allowzero 0) to `target` gives x's shape: the target has x's rank and each entry is
    // x's dimension there, or 0 where the Reshape's input shares x's dimension (axes below zero_ok), or -1 once.
    bool is_shape_of(const std::string& target, const std::string& x, int zero_ok);

private:
    GraphIndex& g;
    std::map<std::string, int> rank_memo;
    int depth = 0;
    const ValueInfo* declared(const std::string& v) const;
    int rank_uncached(const std::string& v);
};

}  // namespace onnx2ggml
