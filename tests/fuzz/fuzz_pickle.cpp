// libFuzzer harness: the torch.save reader (zip directory and restricted unpickler) on raw bytes.
// onnx2ggml::Error is the expected rejection; anything else escaping, a crash or a sanitizer report is a finding.
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "fuzz_common.h"
#include "formats/torch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[size ? size : 1]);  // exact size: ASan sees a read past the end
    if (size) std::memcpy(buf.get(), data, size);
    try {
        size_t bytes = 0;
        for (const o2g::SafeTensor& t : o2g::read_torch_checkpoint(buf.get(), size, "fuzz.ckpt"))
            for (size_t i = 0; i < t.nbytes; i++) bytes += t.data[i];  // every tensor's bytes are readable
        (void)bytes;
    } catch (const onnx2ggml::Error&) {
    } catch (const std::bad_alloc&) {
        fuzz::on_bad_alloc();
    }
    return 0;
}
