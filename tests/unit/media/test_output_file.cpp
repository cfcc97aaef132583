// Output paths: the rename into place.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "media/output_file.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("output file: a temporary is renamed into place whole, a failure names the path") {
  test::ScratchDir dir("output_rename");
  const std::string path = dir.file("a.mp4"), tmp = media::temporary_path(path);
  REQUIRE(tmp == path + ".tmp." + std::to_string(getpid()));
  test::write_bytes(path, "old");
  test::write_bytes(tmp, "new");
  media::rename_into_place(tmp, path);
  REQUIRE_FALSE(fs::exists(tmp));
  std::ifstream in(path);
  REQUIRE(std::string(std::istreambuf_iterator<char>(in), {}) == "new");
  REQUIRE_THROWS_WITH(media::rename_into_place(tmp, path), Contains(path) && Contains(tmp));
}
