// Output paths: one writer per path (the lock), the temporaries a killed run left, and the rename
// into place.
#include <sys/wait.h>
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

namespace {

// The id of a process that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  REQUIRE(pid > 0);
  REQUIRE(waitpid(pid, nullptr, 0) == pid);
  return pid;
}

}  // namespace

TEST_CASE("output file: a second writer of one path fails at once, naming it") {
  test::ScratchDir dir("output_lock");
  const std::string path = dir.file("a.mp4");
  {
    // flock conflicts between two opens of the file in one process as between two processes.
    media::OutputLock first(path, {path});
    REQUIRE(fs::exists(path + ".lock"));
    REQUIRE_THROWS_WITH(media::OutputLock(path, {path}),
                        Contains(path) && Contains("another program is writing this file"));
    media::OutputLock other(dir.file("b.mp4"), {dir.file("b.mp4")});
  }
  REQUIRE_FALSE(fs::exists(path + ".lock"));
  // A lock file left by a killed holder holds no lock.
  test::write_bytes(path + ".lock", "");
  { media::OutputLock again(path, {path}); }
  REQUIRE_FALSE(fs::exists(path + ".lock"));
  REQUIRE_THROWS_WITH(media::OutputLock(dir.file("none/a.mp4"), {}), Contains("cannot create the lock file"));
}

TEST_CASE("output file: taking the lock removes the temporaries of dead processes, and only those") {
  test::ScratchDir dir("output_stale");
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(getppid());
  const std::string path = dir.file("clip.y4m"), wav = dir.file("clip.wav");
  for (const std::string& name : {path + ".tmp." + dead, wav + ".tmp." + dead, path + ".tmp." + alive,
                                  path + ".tmp.x" + dead, dir.file("other.y4m.tmp." + dead)})
    test::write_bytes(name, "partial");
  { media::OutputLock lock(path, {path, wav}); }
  REQUIRE_FALSE(fs::exists(path + ".tmp." + dead));
  REQUIRE_FALSE(fs::exists(wav + ".tmp." + dead));
  REQUIRE(fs::exists(path + ".tmp." + alive));
  REQUIRE(fs::exists(path + ".tmp.x" + dead));
  REQUIRE(fs::exists(dir.file("other.y4m.tmp." + dead)));
  // A PNG sequence's temporary folder goes with all it holds; a live process's stays.
  const std::string folder = dir.file("frames");
  for (const std::string& pid : {dead, alive}) {
    fs::create_directory(folder + ".tmp." + pid);
    test::write_bytes(folder + ".tmp." + pid + "/00000.png", "partial");
  }
  { media::OutputLock lock(folder, {folder}); }
  REQUIRE_FALSE(fs::exists(folder + ".tmp." + dead));
  REQUIRE(fs::exists(folder + ".tmp." + alive + "/00000.png"));
}

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
