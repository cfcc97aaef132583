// The UTF-8 the text side needs, in one place: reading a code point (the tokenizer's whitespace
// strip, the enhancer's letter test), Rust's from_utf8 validity (Hugging Face's byte-fallback
// decode) and replacing every occurrence of a piece (spaces to and from SentencePiece's U+2581).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ltx2::utf8 {

inline constexpr char32_t kReplacement = 0xfffd;

// The code point starting at s[i] and its length in bytes (*len). A malformed or truncated
// sequence reads as U+FFFD of length 1.
char32_t code_point_at(const std::string& s, size_t i, size_t* len);

// Whether s is UTF-8 as Rust's String::from_utf8 accepts it: no malformed or truncated sequence, no
// overlong form, no surrogate, nothing past U+10FFFF.
bool valid(const std::string& s);

// s with every `from` replaced by `to`.
std::string replace_all(std::string s, const std::string& from, const std::string& to);

}  // namespace ltx2::utf8
