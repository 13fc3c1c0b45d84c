// Unicode helpers for the CLIP tokenizer: UTF-8, categories, lowercase and NFC over generated range tables.
#include "text/unicode.h"

#include <algorithm>
#include <unordered_map>

namespace onnx2ggml::unicode {
namespace {

struct CodeRange {
    char32_t first, last;
};
struct LowerRun {
    char32_t first, last;
    int stride, delta;
};
struct Decomposition {
    char32_t cp, first, second;  // second is 0 for a singleton
    int composes;                // 1 when NFC composes first+second back into cp
};
struct CombiningRun {
    char32_t first, last;
    int ccc;
};

#include "text/unicode_tables.inc"

template <class T, size_t N>
const T* find_run(const T (&table)[N], char32_t c) {
    auto it = std::upper_bound(std::begin(table), std::end(table), c, [](char32_t v, const T& r) { return v < r.first; });
    if (it == std::begin(table)) return nullptr;
    --it;
    return c <= it->last ? &*it : nullptr;
}

int ccc(char32_t c) {
    const CombiningRun* r = find_run(kCombiningClasses, c);
    return r ? r->ccc : 0;
}

// Hangul syllables decompose and compose by arithmetic, not by table.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

const Decomposition* find_decomposition(char32_t c) {
    auto it = std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), c,
                               [](const Decomposition& d, char32_t v) { return d.cp < v; });
    return it != std::end(kDecompositions) && it->cp == c ? &*it : nullptr;
}

void decompose(char32_t c, std::vector<char32_t>& out) {
    if (c >= kSBase && c < kSBase + kSCount) {
        int s = int(c - kSBase);
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount) out.push_back(kTBase + s % kTCount);
        return;
    }
    const Decomposition* d = find_decomposition(c);
    if (!d) {
        out.push_back(c);
        return;
    }
    decompose(d->first, out);
    if (d->second) decompose(d->second, out);
}

char32_t compose(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
        return a + (b - kTBase);
    static const std::unordered_map<uint64_t, char32_t> pairs = [] {
        std::unordered_map<uint64_t, char32_t> m;
        for (const Decomposition& d : kDecompositions)
            if (d.composes) m[uint64_t(d.first) << 32 | d.second] = d.cp;
        return m;
    }();
    auto it = pairs.find(uint64_t(a) << 32 | b);
    return it == pairs.end() ? 0 : it->second;
}

}  // namespace

std::vector<char32_t> decode_utf8(const std::string& s) {
    std::vector<char32_t> out;
    size_t i = 0, n = s.size();
    while (i < n) {
        unsigned char b = (unsigned char)s[i];
        int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        char32_t c = len == 1 ? b : len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
        bool ok = len > 0 && i + len <= n;
        for (int k = 1; ok && k < len; k++) {
            unsigned char cb = (unsigned char)s[i + k];
            ok = (cb >> 6) == 2;
            c = c << 6 | (cb & 0x3F);
        }
        // Overlong forms, surrogates and values past U+10FFFF are malformed too.
        static const char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
        ok = ok && c >= kMin[len] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
        out.push_back(ok ? c : 0xFFFD);
        i += ok ? size_t(len) : 1;
    }
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += char(0xC0 | c >> 6);
        out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += char(0xE0 | c >> 12);
        out += char(0x80 | (c >> 6 & 0x3F));
        out += char(0x80 | (c & 0x3F));
    } else {
        out += char(0xF0 | c >> 18);
        out += char(0x80 | (c >> 12 & 0x3F));
        out += char(0x80 | (c >> 6 & 0x3F));
        out += char(0x80 | (c & 0x3F));
    }
}

bool is_letter(char32_t c) { return find_run(kLetterRanges, c) != nullptr; }
bool is_number(char32_t c) { return find_run(kNumberRanges, c) != nullptr; }

bool is_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

void append_lower(std::vector<char32_t>& out, char32_t c) {
    if (c == 0x130) {  // capital I with dot above: the only lowercase longer than one code point
        out.push_back(0x69);
        out.push_back(0x307);
        return;
    }
    const LowerRun* r = find_run(kLowerRuns, c);
    out.push_back(r && (c - r->first) % char32_t(r->stride) == 0 ? char32_t(int64_t(c) + r->delta) : c);
}

std::vector<char32_t> nfc(const std::vector<char32_t>& s) {
    std::vector<char32_t> d;
    for (char32_t c : s) decompose(c, d);
    // Canonical ordering: stable sort of each run of non-starters by combining class.
    for (size_t i = 0; i < d.size();) {
        size_t j = i;
        while (j < d.size() && ccc(d[j]) != 0) j++;
        std::stable_sort(d.begin() + long(i), d.begin() + long(j), [](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
        i = j + 1;
    }
    // Canonical composition: each mark joins the last starter unless a mark of the same or higher class (or a
    // starter) stands between them.
    std::vector<char32_t> out;
    long starter = -1;
    int last_ccc = -1;
    for (char32_t c : d) {
        int cc = ccc(c);
        if (starter >= 0 && (last_ccc < cc || (last_ccc == 0 && cc == 0 && long(out.size()) - 1 == starter))) {
            if (char32_t comp = compose(out[size_t(starter)], c)) {
                out[size_t(starter)] = comp;
                continue;
            }
        }
        if (cc == 0) {
            starter = long(out.size());
            last_ccc = 0;
        } else {
            last_ccc = cc;
        }
        out.push_back(c);
    }
    return out;
}

}  // namespace onnx2ggml::unicode
