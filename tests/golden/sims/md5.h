// MD5 message digest (RFC 1321). Used where the reference derives stable assignments from
// md5 (sharded state-dict ownership), not for security.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ltx2::golden {

using Md5Digest = std::array<uint8_t, 16>;

Md5Digest md5(std::string_view bytes);
// Lower-case hex of the digest ("d41d8cd98f00b204e9800998ecf8427e" for "").
std::string md5_hex(std::string_view bytes);

}  // namespace ltx2::golden
