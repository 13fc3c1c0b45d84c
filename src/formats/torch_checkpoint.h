// torch.save files (.ckpt, .pt, .pth, .bin: a zip of data.pkl and raw storages) read without running any code.
// data.pkl is interpreted by a restricted unpickler that knows only the opcodes and the few globals that rebuild
// tensors and ordered dicts; any other global is a one-line error naming it. Tensors point into the caller's
// mapping (torch stores zip entries uncompressed), so nothing is copied.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/safetensors.h"

namespace o2g {

// Whether the bytes start like a zip archive (torch's format since 1.6).
bool is_torch_zip(const uint8_t* data, size_t size);

// Every tensor of the file, named by its dict path ("a.b.weight"; a top-level "state_dict" dict is the root, as
// checkpoint loaders take it). Errors name `path`. Entries of the zip, as [offset, size] of stored data.
struct ZipEntry {
    std::string name;
    size_t offset = 0, size = 0;
};
std::vector<ZipEntry> read_zip_directory(const uint8_t* data, size_t size, const std::string& path);
std::vector<SafeTensor> read_torch_checkpoint(const uint8_t* data, size_t size, const std::string& path);

}  // namespace o2g
