// The zip directory of a torch.save file (src/formats/torch_checkpoint.h): the central directory, zip64 included
// (checkpoints over 4 GB), every offset checked against the file. Only stored (uncompressed) entries are usable,
// which is what torch writes.
#include <cstring>

#include "common/error.h"
#include "formats/torch_checkpoint.h"

namespace o2g {

using onnx2ggml::fail;

namespace {

uint64_t le(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = (v << 8) | p[k];
    return v;
}

struct Directory {
    uint64_t entries = 0, offset = 0, size = 0;
};

// The end-of-central-directory record (and its zip64 form), searched from the end past an up to 64 KB comment.
Directory find_directory(const uint8_t* d, size_t n, const std::string& path) {
    if (n < 22) fail(path, ": not a zip archive (", n, " bytes)");
    const size_t lowest = n > 22 + 65535 ? n - 22 - 65535 : 0;
    for (size_t at = n - 22 + 1; at-- > lowest;) {
        if (le(d + at, 4) != 0x06054b50) continue;
        Directory dir{le(d + at + 10, 2), le(d + at + 16, 4), le(d + at + 12, 4)};
        if ((dir.entries == 0xffff || dir.offset == 0xffffffff || dir.size == 0xffffffff) && at >= 20 &&
            le(d + at - 20, 4) == 0x07064b50) {
            const uint64_t z = le(d + at - 20 + 8, 8);
            if (n < 56 || z > n - 56 || le(d + z, 4) != 0x06064b50) fail(path, ": corrupt zip64 end record");
            dir = {le(d + z + 32, 8), le(d + z + 48, 8), le(d + z + 40, 8)};
        }
        if (dir.offset > n || dir.size > n - dir.offset)
            fail(path, ": the zip directory lies past the end of the file (truncated?)");
        return dir;
    }
    fail(path, ": not a zip archive, or truncated (no end-of-directory record)");
}

// Zip64 sizes and offset from an entry's extra field, for the fields that read 0xffffffff.
void zip64_extra(const uint8_t* x, size_t len, uint64_t& usize, uint64_t& csize, uint64_t& off) {
    for (size_t i = 0; i + 4 <= len;) {
        const uint64_t id = le(x + i, 2), sz = le(x + i + 2, 2);
        if (i + 4 + sz > len) return;
        if (id == 1) {
            size_t k = i + 4;
            for (uint64_t* v : {&usize, &csize, &off})
                if (*v == 0xffffffff && k + 8 <= i + 4 + sz) *v = le(x + k, 8), k += 8;
            return;
        }
        i += 4 + sz;
    }
}

}  // namespace

bool is_torch_zip(const uint8_t* data, size_t size) { return size >= 4 && le(data, 4) == 0x04034b50; }

std::vector<ZipEntry> read_zip_directory(const uint8_t* d, size_t n, const std::string& path) {
    const Directory dir = find_directory(d, n, path);
    std::vector<ZipEntry> out;
    size_t at = dir.offset;
    const size_t end = dir.offset + dir.size;
    for (uint64_t e = 0; e < dir.entries; e++) {
        if (at + 46 > end || le(d + at, 4) != 0x02014b50) fail(path, ": corrupt zip directory (entry ", e, ")");
        const uint64_t method = le(d + at + 10, 2), name_len = le(d + at + 28, 2), extra_len = le(d + at + 30, 2),
                       comment_len = le(d + at + 32, 2);
        uint64_t csize = le(d + at + 20, 4), usize = le(d + at + 24, 4), off = le(d + at + 42, 4);
        if (at + 46 + name_len + extra_len + comment_len > end) fail(path, ": corrupt zip directory (entry ", e, ")");
        ZipEntry z;
        z.name.assign(reinterpret_cast<const char*>(d + at + 46), name_len);
        zip64_extra(d + at + 46 + name_len, extra_len, usize, csize, off);
        at += 46 + name_len + extra_len + comment_len;
        if (method != 0)
            fail(path, ": zip entry '", printable(z.name), "' is compressed (method ", method,
                 "); torch writes stored entries: re-save it with torch.save");
        if (csize != usize) fail(path, ": zip entry '", printable(z.name), "': stored sizes disagree");
        if (off > n || n - off < 30 || le(d + off, 4) != 0x04034b50)
            fail(path, ": zip entry '", printable(z.name), "': no local header at offset ", off, " (truncated?)");
        const uint64_t data = off + 30 + le(d + off + 26, 2) + le(d + off + 28, 2);
        if (data > n || usize > n - data)
            fail(path, ": zip entry '", printable(z.name), "': ", usize, " bytes at offset ", data,
                 " lie past the end of the file (", n, " bytes; truncated?)");
        z.offset = size_t(data);
        z.size = size_t(usize);
        out.push_back(std::move(z));
    }
    return out;
}

}  // namespace o2g
