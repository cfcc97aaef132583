#include <string>

#include "golden/sims/md5.h"
#include "support/catch.h"

using namespace ltx2;
using namespace ltx2::golden;

TEST_CASE("md5: RFC 1321 appendix A.5 test suite") {
  REQUIRE(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  REQUIRE(md5_hex("a") == "0cc175b9c0f1b6a831c399e269772661");
  REQUIRE(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  REQUIRE(md5_hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
  REQUIRE(md5_hex("abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b");
  REQUIRE(md5_hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
          "d174ab98d277d9f5a5611c2c9f419d9f");
  REQUIRE(md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890") ==
          "57edf4a22be3c955ac49da2e2107b67a");
}

TEST_CASE("md5: lengths around the 56-byte padding boundary") {
  // 55 bytes pad into one block, 56 need a second one.
  REQUIRE(md5_hex(std::string(55, 'a')) == "ef1772b6dff9a122358552954ad0df65");
  REQUIRE(md5_hex(std::string(56, 'a')) == "3b0c8ac703f828b04c6c197006d17218");
  REQUIRE(md5_hex(std::string(64, 'a')) == "014842d480b571495a4a0363793f7367");
}
