// apps/common's ClipFile: every path an output puts in place is locked for the whole job, from
// before the first frame; each output kind gets what it holds and nothing else.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/clip_file.h"
#include "core/error.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("clip file: a second writer of the path fails as it starts, and a killed run's temporaries go") {
  test::ScratchDir dir("clip_file_lock");
  const std::string path = dir.file("a.y4m");
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  REQUIRE(waitpid(gone, nullptr, 0) == gone);
  test::write_bytes(path + ".tmp." + std::to_string(gone), "partial");
  test::write_bytes(dir.file("a.wav.tmp.") + std::to_string(gone), "partial");
  {
    cli::ClipFile file(path, 24, 16000, true);
    REQUIRE_THROWS_WITH(cli::ClipFile(path, 24, 16000, true), Contains(path) && Contains("another program"));
    // The .y4m's .wav is locked too: an audio-only job on it fails the same way.
    REQUIRE_THROWS_WITH(cli::ClipFile(dir.file("a.wav"), 24, 16000, true),
                        Contains(dir.file("a.wav")) && Contains("another program"));
    file.add_frames(Tensor::zeros({1, 8, 8, 3}, DType::U8));
    file.add_audio(Tensor::zeros({2, 100}), 16000);
    file.finish();
  }
  REQUIRE(test::names_in(dir.path()) == std::set<std::string>{"a.y4m", "a.wav"});
}

TEST_CASE(
    "clip file: a .wav holds the audio alone, and without audio there is no .wav and no audio is taken") {
  test::ScratchDir dir("clip_file_kinds");
  {
    cli::ClipFile wav(dir.file("s.wav"), 24, 16000, true);
    REQUIRE_THROWS_WITH(wav.add_frames(Tensor::zeros({1, 8, 8, 3}, DType::U8)), Contains("holds no video"));
    wav.add_audio(Tensor::zeros({2, 100}), 16000);
    REQUIRE_THROWS_WITH(wav.add_audio(Tensor::zeros({2, 1}), 24000), Contains("24000 Hz"));
    wav.finish();
    REQUIRE(wav.frames() == 0);
  }
  REQUIRE(fs::file_size(dir.file("s.wav")) == 44 + 100 * 4);
  {
    cli::ClipFile y4m(dir.file("v.y4m"), 24, 16000, false);
    y4m.add_frames(Tensor::zeros({2, 8, 8, 3}, DType::U8));
    REQUIRE_THROWS_WITH(y4m.add_audio(Tensor::zeros({2, 100}), 16000), Contains("--no-audio"));
    y4m.finish();
  }
  {
    // A sequence's folder is its lock: another pattern in the same folder is the same output.
    cli::ClipFile seq(dir.file("f/%04d.png"), 24, 16000, true);
    REQUIRE_THROWS_WITH(cli::ClipFile(dir.file("f/x%d.png"), 24, 16000, true), Contains("another program"));
    seq.add_frames(Tensor::zeros({2, 8, 8, 3}, DType::U8));
    REQUIRE_THROWS_WITH(seq.finish(), Contains("the run produced no audio"));
  }
  REQUIRE(test::names_in(dir.path()) == std::set<std::string>{"s.wav", "v.y4m"});
  cli::ClipFile none(dir.file("none.wav"), 24, 16000, true);
  REQUIRE_THROWS_WITH(none.finish(), Contains("the run produced no audio"));
}
