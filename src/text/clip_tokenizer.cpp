// CLIP BPE tokenizer: the merges file, text cleanup, CLIP's pre-token pattern, byte-level BPE.
#include "onnx2ggml/clip_tokenizer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "common/platform.h"
#include "lora/embedding.h"
#include "text/unicode.h"

#ifdef ONNX2GGML_HAVE_ZLIB
#include <zlib.h>
#endif

namespace onnx2ggml {
namespace {

// OpenAI's file has a header line and many more merges than CLIP uses: the vocabulary is 256 bytes, the same 256
// with </w>, 48894 merges and the two special tokens (49408 in all).
constexpr int kMerges = 49152 - 256 - 2;
const char* const kSpecials[2] = {"<|startoftext|>", "<|endoftext|>"};

std::string read_file(const std::string& path) {
#ifdef ONNX2GGML_HAVE_ZLIB
    gzFile f = gzopen(path.c_str(), "rb");  // reads plain files unchanged
    if (!f) throw std::runtime_error(path + ": cannot open the CLIP merges file");
    std::string s;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) s.append(buf, size_t(n));
    bool bad = n < 0;
    gzclose(f);
    if (bad) throw std::runtime_error(path + ": corrupt gzip data");
    return s;
#else
    FILE* f = platform::open_file(path, "rb");
    if (!f) throw std::runtime_error(path + ": cannot open the CLIP merges file");
    std::string s;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    fclose(f);
    if (s.size() >= 2 && (unsigned char)s[0] == 0x1f && (unsigned char)s[1] == 0x8b)
        throw std::runtime_error(path + ": gzip file, but onnx2ggml was built without zlib: gunzip it first");
    return s;
#endif
}

// GPT-2's reversible map from bytes to printable code points: printable Latin-1 bytes stand for themselves, the
// rest take U+0100 onwards in byte order. Token ids 0..255 follow the printable bytes first.
std::vector<int> byte_order() {
    std::vector<int> order;
    std::vector<bool> printable(256);
    for (int b = 0; b < 256; b++) {
        printable[size_t(b)] = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        if (printable[size_t(b)]) order.push_back(b);
    }
    for (int b = 0; b < 256; b++)
        if (!printable[size_t(b)]) order.push_back(b);
    return order;
}

bool starts_with(const std::vector<char32_t>& t, size_t i, const char* s) {
    for (; *s; s++, i++)
        if (i >= t.size() || t[i] != char32_t(*s)) return false;
    return true;
}

// CLIP's pattern over cleaned text: the special tokens' spelling | 's 't 're 've 'm 'll 'd | letter runs | one digit |
// runs of other non-space characters. Spaces separate pieces and are dropped.
std::vector<std::string> pre_tokenize(const std::vector<char32_t>& t) {
    static const char* const kContractions[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    std::vector<std::string> pieces;
    size_t i = 0, n = t.size();
    while (i < n) {
        size_t j = i;
        // A special token's spelling reaches here only in other case ("<|ENDOFTEXT|>", lowercased since). It ends a
        // piece, and transformers' byte-level step then splits it as GPT-2 does: "<|", the word, "|>".
        bool special = false;
        for (const char* sp : kSpecials) {
            if (special || !starts_with(t, i, sp)) continue;
            std::string word(sp + 2, strlen(sp) - 4);
            pieces.insert(pieces.end(), {"<|", word, "|>"});
            i += strlen(sp);
            special = true;
        }
        if (special) continue;
        if (t[i] == '\'') {
            for (const char* c : kContractions) {
                size_t k = 0;
                while (c[k] && i + 1 + k < n && t[i + 1 + k] == char32_t(c[k])) k++;
                if (!c[k]) {
                    j = i + 1 + k;
                    break;
                }
            }
        }
        if (j == i) {
            if (unicode::is_space(t[i])) {
                i++;
                continue;
            }
            if (unicode::is_letter(t[i])) {
                while (j < n && unicode::is_letter(t[j])) j++;
            } else if (unicode::is_number(t[i])) {
                j = i + 1;
            } else {
                while (j < n && !unicode::is_space(t[j]) && !unicode::is_letter(t[j]) && !unicode::is_number(t[j])) j++;
            }
        }
        std::string piece;
        for (size_t k = i; k < j; k++) unicode::append_utf8(piece, t[k]);
        pieces.push_back(std::move(piece));
        i = j;
    }
    return pieces;
}

// transformers' normalizer: NFC, every whitespace run to one space, lowercase character by character.
std::vector<char32_t> clean(const std::string& text) {
    std::vector<char32_t> c = unicode::nfc(unicode::decode_utf8(text)), out;
    for (size_t i = 0; i < c.size(); i++) {
        if (unicode::is_space(c[i])) {
            while (i + 1 < c.size() && unicode::is_space(c[i + 1])) i++;
            out.push_back(' ');
        } else {
            unicode::append_lower(out, c[i]);
        }
    }
    return out;
}

}  // namespace

ClipTokenizer::ClipTokenizer(const std::string& path) {
    std::string data = read_file(path);
    std::vector<int> order = byte_order();
    std::vector<std::string> byte_char(256);
    for (int i = 0; i < 256; i++) {
        int b = order[size_t(i)];
        unicode::append_utf8(byte_char[size_t(b)], char32_t(i < 188 ? b : 256 + (i - 188)));
        vocab_[byte_char[size_t(b)]] = i;
        vocab_[byte_char[size_t(b)] + "</w>"] = 256 + i;
        byte_id_[b] = i;
        byte_end_id_[b] = 256 + i;
    }
    size_t pos = data.find('\n');  // the first line is a header
    int line = 1;
    for (int r = 0; r < kMerges; r++) {
        line++;
        if (pos == std::string::npos || pos + 1 >= data.size())
            throw std::runtime_error(path + ": line " + std::to_string(line) + ": file ends after " + std::to_string(r) +
                                     " merges, CLIP needs " + std::to_string(kMerges));
        size_t end = data.find('\n', pos + 1);
        std::string l = data.substr(pos + 1, (end == std::string::npos ? data.size() : end) - pos - 1);
        pos = end;
        if (!l.empty() && l.back() == '\r') l.pop_back();
        size_t sp = l.find(' ');
        std::string a = sp == std::string::npos ? l : l.substr(0, sp), b = sp == std::string::npos ? "" : l.substr(sp + 1);
        auto ia = vocab_.find(a), ib = vocab_.find(b);
        if (a.empty() || b.empty() || b.find(' ') != std::string::npos)
            throw std::runtime_error(path + ": line " + std::to_string(line) + ": expected two tokens separated by one space");
        if (ia == vocab_.end() || ib == vocab_.end())
            throw std::runtime_error(path + ": line " + std::to_string(line) + ": '" + (ia == vocab_.end() ? a : b) +
                                     "' is neither a byte nor made by an earlier merge");
        int64_t id = 512 + r;
        vocab_[a + b] = id;
        merges_[uint64_t(ia->second) << 32 | uint64_t(ib->second)] = Merge{r, id};
    }
    vocab_[kSpecials[0]] = kBos;
    vocab_[kSpecials[1]] = kEos;
}

// BPE over one piece: start from its bytes (the last one marked end-of-word) and apply the best-ranked merge
// everywhere it occurs, left to right, until no adjacent pair has a merge.
void ClipTokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
    std::vector<int64_t> w;
    for (size_t i = 0; i < piece.size(); i++) {
        unsigned char b = (unsigned char)piece[i];
        w.push_back(i + 1 < piece.size() ? byte_id_[b] : byte_end_id_[b]);
    }
    for (;;) {
        const Merge* best = nullptr;
        uint64_t best_key = 0;
        for (size_t i = 0; i + 1 < w.size(); i++) {
            uint64_t key = uint64_t(w[i]) << 32 | uint64_t(w[i + 1]);
            auto it = merges_.find(key);
            if (it != merges_.end() && (!best || it->second.rank < best->rank)) {
                best = &it->second;
                best_key = key;
            }
        }
        if (!best) break;
        std::vector<int64_t> next;
        for (size_t i = 0; i < w.size(); i++) {
            if (i + 1 < w.size() && (uint64_t(w[i]) << 32 | uint64_t(w[i + 1])) == best_key) {
                next.push_back(best->result);
                i++;
            } else {
                next.push_back(w[i]);
            }
        }
        w.swap(next);
    }
    out.insert(out.end(), w.begin(), w.end());
}

std::vector<int64_t> ClipTokenizer::encode(const std::string& text, size_t limit) const {
    // Special tokens written out in the prompt are matched first, case and all, as transformers does.
    std::vector<int64_t> ids;
    size_t start = 0;
    while (start <= text.size() && ids.size() < limit) {
        size_t hit = std::string::npos;
        int which = -1;
        for (int s = 0; s < 2; s++) {
            size_t p = text.find(kSpecials[s], start);
            if (p < hit) hit = p, which = s;
        }
        encode_text(text.substr(start, hit == std::string::npos ? std::string::npos : hit - start), ids, limit);
        if (which < 0) break;
        ids.push_back(which == 0 ? kBos : kEos);
        start = hit + std::string(kSpecials[which]).size();
    }
    return ids;
}

// Text between special tokens: cleaned, then cut at added tokens (leftmost, longest), the rest pre-tokenized and BPE'd.
void ClipTokenizer::encode_text(const std::string& text, std::vector<int64_t>& ids, size_t limit) const {
    std::vector<char32_t> t = clean(text);
    size_t from = 0;
    auto words = [&](size_t to) {
        std::vector<char32_t> part(t.begin() + long(from), t.begin() + long(to));
        for (const std::string& piece : pre_tokenize(part))
            if (ids.size() < limit) bpe(piece, ids);
    };
    for (size_t i = 0; i < t.size() && !added_.empty();) {
        const Added* best = nullptr;
        for (const Added& a : added_)
            if (a.text.size() <= t.size() - i && (!best || a.text.size() > best->text.size()) &&
                std::equal(a.text.begin(), a.text.end(), t.begin() + long(i)))
                best = &a;
        if (!best) {
            i++;
            continue;
        }
        words(i);
        if (ids.size() < limit) ids.insert(ids.end(), best->ids.begin(), best->ids.end());
        i += best->text.size();
        from = i;
    }
    words(t.size());
}

void ClipTokenizer::add_embeddings(const std::vector<EmbeddingFile>& files, int64_t width, const std::string& prefer) {
    for (const EmbeddingFile& f : files) {
        o2g::Embedding e = o2g::read_embedding(f);
        const o2g::EmbeddingVectors& v = o2g::embedding_vectors(e, width, prefer);
        std::vector<std::string> names = o2g::embedding_tokens(e, v.count);
        Added whole{clean(e.token), {}};
        for (const std::string& name : names) {
            Added one{clean(name), {next_id_++}};
            if (one.text.empty() || one.text == std::vector<char32_t>{U' '})
                throw std::runtime_error(f.path + ": embedding token '" + name + "' is empty or blank");
            bool clash = vocab_.count(name) != 0;
            for (const Added& a : added_) clash |= a.text == one.text;
            if (clash)
                throw std::runtime_error(f.path + ": embedding token '" + name + "' is already a token (of the " +
                                         std::to_string(vocab_.size()) + " in the CLIP vocabulary or " +
                                         std::to_string(added_.size()) + " added): pass FILE:TOKEN with another token");
            whole.ids.push_back(one.ids[0]);
            if (name != e.token) added_.push_back(std::move(one));
        }
        added_.push_back(std::move(whole));
    }
}

std::vector<int64_t> ClipTokenizer::tokenize(const std::string& text, int64_t pad, int length) const {
    if (length < 2) throw std::runtime_error("token sequence length must be at least 2");
    std::vector<int64_t> ids = encode(text, size_t(length - 2)), out{kBos};
    if (ids.size() > size_t(length - 2)) ids.resize(size_t(length - 2));
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(kEos);
    out.resize(size_t(length), pad);
    return out;
}

std::string default_clip_vocab_path() {
    auto exists = [](const std::string& p) {
        std::error_code ec;
        return std::filesystem::is_regular_file(platform::fs_path(p), ec);
    };
    if (const char* env = std::getenv("ONNX2GGML_CLIP_VOCAB")) return env;
    const std::string rel = "/.deps/clip/bpe_simple_vocab_16e6.txt.gz";
#ifdef ONNX2GGML_SOURCE_DIR
    if (exists(ONNX2GGML_SOURCE_DIR + rel)) return ONNX2GGML_SOURCE_DIR + rel;
#endif
    std::string dir = platform::executable_path();
    if (!dir.empty()) {
        for (int up = 0; up < 3 && dir.find('/') != std::string::npos; up++) {
            dir = dir.substr(0, dir.rfind('/'));
            if (exists(dir + rel)) return dir + rel;
        }
    }
    return "";
}

}  // namespace onnx2ggml
