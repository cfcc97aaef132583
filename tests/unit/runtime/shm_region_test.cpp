// Shared-memory regions: anonymous from birth, sealed at their size, shared through a descriptor.
#include "runtime/shm_region.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "support/catch.h"

namespace {

using ltx2::runtime::ShmRegion;

TEST_CASE("shm region: the name is gone at once and a descriptor shares the memory") {
  const std::string name = "/ltx2t-unit-" + std::to_string(getpid());
  ShmRegion a = ShmRegion::create(name, 1 << 16);
  REQUIRE_FALSE(std::filesystem::exists("/dev/shm" + name));
  REQUIRE(a.size() == 1 << 16);
  REQUIRE(static_cast<const unsigned char*>(a.data())[12345] == 0);
  ShmRegion b = ShmRegion::adopt(dup(a.fd()));
  REQUIRE(b.size() == a.size());
  REQUIRE(b.fd() == -1);
  std::memcpy(a.data(), "fleet", 6);
  REQUIRE(std::strcmp(static_cast<const char*>(b.data()), "fleet") == 0);
  ShmRegion again = ShmRegion::create(name, 4096);  // a label, not a name: it can repeat
  REQUIRE(again.data() != a.data());
  ShmRegion moved = std::move(again);
  REQUIRE(again.data() == nullptr);
  REQUIRE(moved.size() == 4096);
}

TEST_CASE("shm region: bad descriptors and sizes are refused") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  close(fds[1]);
  REQUIRE_THROWS_WITH(ShmRegion::adopt(fds[0]), Catch::Matchers::Contains("not a shared-memory object"));
  REQUIRE_THROWS_WITH(ShmRegion::create("/ltx2t-unit-zero", 0),
                      Catch::Matchers::Contains("size must be positive"));
  REQUIRE_THROWS_WITH(ShmRegion::create(std::string(300, 'x'), 4096),
                      Catch::Matchers::Contains("memfd_create failed"));
}

TEST_CASE("shm region: no holder of the descriptor can resize it") {
  ShmRegion a = ShmRegion::create("/ltx2t-unit-sealed", 1 << 16);
  const int fd = dup(a.fd());  // what a worker holds
  REQUIRE(ftruncate(fd, 4096) != 0);
  REQUIRE(errno == EPERM);
  REQUIRE(ftruncate(fd, 1 << 20) != 0);
  REQUIRE(posix_fallocate(fd, 0, 1 << 20) != 0);
  REQUIRE(lseek(fd, 0, SEEK_END) == (1 << 16));
  close(fd);
  static_cast<unsigned char*>(a.data())[(1 << 16) - 1] = 7;  // the last byte is still there
}

}  // namespace
