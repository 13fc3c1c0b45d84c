// What the current thread is building, for the error line printed when ggml aborts (a GGML_ASSERT on a shape
// that no check of ours caught): the node then appears in the message.
#pragma once
#include <string>

namespace o2g {

// Sets the context for this thread until the returned object is destroyed (contexts nest).
struct AbortContext {
    explicit AbortContext(const std::string& what);
    ~AbortContext();
    AbortContext(const AbortContext&) = delete;
    AbortContext& operator=(const AbortContext&) = delete;
    std::string what;
    const std::string* previous;
};

}  // namespace o2g
