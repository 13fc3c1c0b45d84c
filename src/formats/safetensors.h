// A safetensors reader: an 8-byte header length, a JSON header (name -> dtype, shape, data_offsets), then raw
// little-endian data. torch.save files (.ckpt, .pt) open the same way (src/formats/torch_checkpoint.h). The file is mapped; every offset and size is checked against the file before use, and each
// problem is one error line naming the file (and the tensor).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace o2g {

struct SafeTensor {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16", ... as written
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
    int64_t numel() const;
};

// A name from a file as messages show it: bytes outside printable ASCII become \xNN (no terminal escapes).
std::string printable(const std::string& name);

class SafetensorsFile {
public:
    explicit SafetensorsFile(const std::string& path);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return path_; }
    const std::vector<SafeTensor>& tensors() const { return tensors_; }
    const SafeTensor* find(const std::string& name) const;
    // The "__metadata__" strings (empty when absent).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    // A tensor's values as f32 (F32, F16, BF16, F64); other dtypes are an error naming the file and tensor.
    std::vector<float> floats(const SafeTensor& t) const;
    void check_floats(const SafeTensor& t) const;  // the same error, without reading

private:
    std::string path_;
    const uint8_t* map_ = nullptr;
    size_t size_ = 0;
    std::vector<SafeTensor> tensors_;
    std::map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace o2g
