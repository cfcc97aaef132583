// MD5 after RFC 1321 section 3: 64-byte blocks, four rounds of 16 steps, little-endian words.
#include "golden/sims/md5.h"

#include <cmath>
#include <cstring>

namespace ltx2::golden {

namespace {

// Per-step left rotations, round by round (RFC 1321 3.4).
constexpr uint32_t kShift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

// T[i] = floor(2^32 * |sin(i + 1)|); exact in double precision for all 64 entries.
const std::array<uint32_t, 64>& sine_table() {
  static const std::array<uint32_t, 64> t = [] {
    std::array<uint32_t, 64> v{};
    for (int i = 0; i < 64; ++i)
      v[i] = static_cast<uint32_t>(std::floor(std::fabs(std::sin(i + 1.0)) * 4294967296.0));
    return v;
  }();
  return t;
}

uint32_t rotl(uint32_t x, uint32_t c) {
  return (x << c) | (x >> (32 - c));
}

void process_block(const uint8_t* block, uint32_t state[4]) {
  uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = uint32_t(block[4 * i]) | uint32_t(block[4 * i + 1]) << 8 | uint32_t(block[4 * i + 2]) << 16 |
           uint32_t(block[4 * i + 3]) << 24;
  const auto& t = sine_table();
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  for (int i = 0; i < 64; ++i) {
    uint32_t f;
    int g;
    if (i < 16) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (i < 32) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) % 16;
    } else if (i < 48) {
      f = b ^ c ^ d;
      g = (3 * i + 5) % 16;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) % 16;
    }
    uint32_t next = b + rotl(a + f + t[i] + m[g], kShift[i]);
    a = d;
    d = c;
    c = b;
    b = next;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
}

}  // namespace

Md5Digest md5(std::string_view bytes) {
  uint32_t state[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t full = bytes.size() / 64 * 64;
  for (size_t off = 0; off < full; off += 64) process_block(data + off, state);
  // Padding: 0x80, zeros to 56 mod 64, then the bit length as a little-endian 64-bit integer.
  uint8_t tail[128] = {};
  size_t rest = bytes.size() - full;
  std::memcpy(tail, data + full, rest);
  tail[rest] = 0x80;
  size_t tail_len = rest < 56 ? 64 : 128;
  uint64_t bits = static_cast<uint64_t>(bytes.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 8 + i] = static_cast<uint8_t>(bits >> (8 * i));
  for (size_t off = 0; off < tail_len; off += 64) process_block(tail + off, state);
  Md5Digest out{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(state[i] >> (8 * j));
  return out;
}

std::string md5_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : md5(bytes)) {
    hex.push_back(digits[b >> 4]);
    hex.push_back(digits[b & 15]);
  }
  return hex;
}

}  // namespace ltx2::golden
