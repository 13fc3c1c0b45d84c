// The few Unicode operations CLIP's text cleanup and pre-tokenizer need, from tables generated out of Python's
// unicodedata (scripts/gen_unicode_tables.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnx2ggml::unicode {

// Code points of UTF-8 text; a malformed byte becomes U+FFFD, as Python's errors="replace" does.
std::vector<char32_t> decode_utf8(const std::string& s);
void append_utf8(std::string& out, char32_t c);

bool is_letter(char32_t c);  // general category L*
bool is_number(char32_t c);  // general category N*
bool is_space(char32_t c);   // the White_Space property (what \s matches in Unicode regex engines)
// Per-character full lowercase (U+0130 gives two code points); no context rules such as a final sigma.
void append_lower(std::vector<char32_t>& out, char32_t c);
// Normalization form C: canonical decomposition, canonical ordering, canonical composition.
std::vector<char32_t> nfc(const std::vector<char32_t>& s);

}  // namespace onnx2ggml::unicode
