// libFuzzer harness: the ONNX loader on raw bytes. onnx2ggml::Error is the expected rejection; any other
// exception escaping, a crash, a leak or a sanitizer report is a finding.
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "fuzz_common.h"
#include "ir/ir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // An exact-size copy, so ASan sees any read one byte past the end.
    std::unique_ptr<uint8_t[]> buf(new uint8_t[size ? size : 1]);
    if (size) std::memcpy(buf.get(), data, size);
    try {
        auto m = onnx2ggml::parse_model(buf.get(), size, "fuzz.onnx", fuzz::scratch_dir(), nullptr);
    } catch (const onnx2ggml::Error&) {
    } catch (const std::bad_alloc&) {
        fuzz::on_bad_alloc();
    }
    return 0;
}
