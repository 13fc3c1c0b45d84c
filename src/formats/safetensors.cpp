// safetensors reader (src/formats/safetensors.h).
#include "formats/safetensors.h"

#include "common/platform.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/error.h"
#include "ggml.h"
#include "formats/json.h"
#include "formats/torch_checkpoint.h"

namespace o2g {

using onnx2ggml::fail;
namespace platform = onnx2ggml::platform;

int64_t SafeTensor::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

namespace {

// Element size of a safetensors dtype; 0 for names this reader does not know.
size_t dtype_size(const std::string& d) {
    static const std::map<std::string, size_t> sizes = {
        {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
        {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8}};
    auto it = sizes.find(d);
    return it == sizes.end() ? 0 : it->second;
}

}  // namespace

std::string printable(const std::string& name) {
    std::string r;
    for (unsigned char c : name) {
        if (c >= 0x20 && c < 0x7f) {
            r += char(c);
        } else {
            char buf[8];
            snprintf(buf, sizeof buf, "\\x%02x", c);
            r += buf;
        }
    }
    return r;
}

namespace {

// One tensor's header entry, checked against the data section (data_size bytes at data).
SafeTensor header_entry(const std::string& path, const std::string& name, const Json& v, const uint8_t* data,
                        size_t data_size) {
    const Json* dt = v.get("dtype");
    const Json* shape = v.get("shape");
    const Json* offs = v.get("data_offsets");
    if (!dt || dt->kind != Json::String || !shape || shape->kind != Json::Array || !offs ||
        offs->kind != Json::Array)
        fail(path, ": tensor '", printable(name), "': needs dtype, shape and data_offsets");
    const std::string shown = printable(name);
    SafeTensor t;
    t.name = name;
    t.dtype = dt->str;
    int64_t numel = 1;
    for (const Json& d : shape->arr) {
        if (!d.is_int || d.i < 0) fail(path, ": tensor '", shown, "': a dim is not a non-negative integer");
        if (d.i > 0 && numel > (int64_t(1) << 48) / d.i) fail(path, ": tensor '", shown, "': too large");
        numel *= d.i;
        t.shape.push_back(d.i);
    }
    if (offs->arr.size() != 2 || !offs->arr[0].is_int || !offs->arr[1].is_int || offs->arr[0].i < 0 ||
        offs->arr[1].i < offs->arr[0].i)
        fail(path, ": tensor '", shown, "': data_offsets must be two integers [begin, end] with begin <= end");
    uint64_t b = uint64_t(offs->arr[0].i), e = uint64_t(offs->arr[1].i);
    if (e > data_size)
        fail(path, ": tensor '", shown, "': data_offsets [", b, ", ", e, "] lie past the end of the data (",
             data_size, " bytes; the file is truncated or corrupt)");
    size_t es = dtype_size(t.dtype);
    if (es && e - b != uint64_t(numel) * es)
        fail(path, ": tensor '", shown, "': ", e - b, " bytes of data, its dtype ", printable(t.dtype),
             " and shape need ", uint64_t(numel) * es);
    t.data = data + b;
    t.nbytes = size_t(e - b);
    return t;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
    platform::FileMap fm;
    std::string err;
    if (!platform::map_file(path, fm, err)) fail(path, ": ", err);
    map_ = static_cast<const uint8_t*>(fm.addr);
    size_ = fm.size;
    try {
        if (is_torch_zip(map_, size_)) {  // a torch.save file (.ckpt, .pt): read without running its pickle
            tensors_ = read_torch_checkpoint(map_, size_, path);
            for (size_t i = 0; i < tensors_.size(); i++)
                if (!index_.emplace(tensors_[i].name, i).second)
                    fail(path, ": tensor '", printable(tensors_[i].name), "' appears twice");
            return;
        }
        if (size_ >= 12 && map_[0] == 0x80 && map_[2] == 0x8a && map_[3] == 0x0a)  // a pickled magic number first
            fail(path, ": a torch file in the legacy (before torch 1.6) format; re-save it with torch.save or as .safetensors");
        if (size_ < 8) fail(path, ": not a safetensors file: ", size_, " bytes, shorter than the 8-byte header length");
        uint64_t hlen = 0;
        for (int k = 7; k >= 0; k--) hlen = (hlen << 8) | map_[k];
        if (hlen > size_ - 8)
            fail(path, ": not a safetensors file: the header claims ", hlen, " bytes, the file has ", size_ - 8,
                 " after the length");
        Json h;
        try {
            h = parse_json(reinterpret_cast<const char*>(map_ + 8), size_t(hlen));
        } catch (const std::runtime_error& e) {
            fail(path, ": malformed safetensors header (JSON ", e.what(), ")");
        }
        if (h.kind != Json::Object) fail(path, ": malformed safetensors header (not a JSON object)");
        const uint8_t* data = map_ + 8 + hlen;
        const size_t data_size = size_ - 8 - size_t(hlen);
        for (auto& [name, v] : h.obj) {
            if (name == "__metadata__") {
                if (v.kind != Json::Object) fail(path, ": __metadata__ is not an object");
                for (auto& [k, s] : v.obj)
                    if (s.kind == Json::String) metadata_[k] = s.str;
                continue;
            }
            SafeTensor t = header_entry(path, name, v, data, data_size);
            const std::string shown = printable(name);
            if (index_.count(name)) fail(path, ": tensor '", shown, "' appears twice");
            index_[name] = tensors_.size();
            tensors_.push_back(std::move(t));
        }
    } catch (...) {
        if (map_) platform::unmap_file({const_cast<uint8_t*>(map_), size_});
        map_ = nullptr;
        throw;
    }
}

SafetensorsFile::~SafetensorsFile() {
    if (map_) platform::unmap_file({const_cast<uint8_t*>(map_), size_});
}

const SafeTensor* SafetensorsFile::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::check_floats(const SafeTensor& t) const {
    if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16" && t.dtype != "F64")
        fail(path_, ": tensor '", printable(t.name), "' has dtype ", printable(t.dtype),
             "; LoRA weights must be F32, F16, BF16 or F64");
}

std::vector<float> SafetensorsFile::floats(const SafeTensor& t) const {
    check_floats(t);
    std::vector<float> out(size_t(t.numel()));
    const size_t n = out.size();
    if (t.dtype == "F32") {
        if (n) std::memcpy(out.data(), t.data, n * 4);
    } else if (t.dtype == "F16") {
        for (size_t i = 0; i < n; i++) {
            ggml_fp16_t h;
            std::memcpy(&h, t.data + 2 * i, 2);
            out[i] = ggml_fp16_to_fp32(h);
        }
    } else if (t.dtype == "BF16") {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            std::memcpy(&h, t.data + 2 * i, 2);
            uint32_t bits = uint32_t(h) << 16;
            std::memcpy(&out[i], &bits, 4);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            double d;
            std::memcpy(&d, t.data + 8 * i, 8);
            out[i] = float(d);
        }
    }
    return out;
}

}  // namespace o2g
