// UTF-8 helpers (see utf8.h).
#include "models/text/utf8.h"

namespace ltx2::utf8 {

namespace {

// The sequence length a lead byte announces (0: not a lead byte).
size_t sequence_length(unsigned char lead) {
  return lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
}

}  // namespace

char32_t code_point_at(const std::string& s, size_t i, size_t* len) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const size_t n = sequence_length(byte(i));
  *len = 1;
  if (n == 0 || i + n > s.size()) return kReplacement;
  char32_t cp = n == 1 ? byte(i) : byte(i) & (0xff >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return kReplacement;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  *len = n;
  return cp;
}

bool valid(const std::string& s) {
  constexpr char32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};  // below these a form is overlong
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    const char32_t cp = code_point_at(s, i, &n);
    if (n != sequence_length(static_cast<unsigned char>(s[i])) || cp < least[n] ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
      return false;
  }
  return true;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace ltx2::utf8
