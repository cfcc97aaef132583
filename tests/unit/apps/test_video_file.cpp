// apps/common's VideoFile: the output path is locked for the whole job, from before the first frame.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/video_file.h"
#include "core/error.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("video file: a second writer of the path fails as it starts, and a killed run's temporaries go") {
  test::ScratchDir dir("video_file_lock");
  const std::string path = dir.file("a.y4m");
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  REQUIRE(waitpid(gone, nullptr, 0) == gone);
  test::write_bytes(path + ".tmp." + std::to_string(gone), "partial");
  test::write_bytes(dir.file("a.wav.tmp.") + std::to_string(gone), "partial");
  {
    cli::VideoFile file(path, 24, 16000);
    REQUIRE_THROWS_WITH(cli::VideoFile(path, 24, 16000), Contains(path) && Contains("another program"));
    file.add_frames(Tensor::zeros({1, 8, 8, 3}, DType::U8));
    file.add_audio(Tensor::zeros({2, 100}), 16000);
    file.finish();
  }
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.insert(e.path().filename().string());
  REQUIRE(left == std::set<std::string>{"a.y4m", "a.wav"});
}
