// The PNG sequence output: which frame patterns are accepted, every frame read back (count, size,
// pixels) with the project's PNG reader, the audio beside them, the folder appearing whole only at
// finish(), an earlier sequence replaced but never a folder holding anything else, and nothing left
// by a writer that never finished.
#include <filesystem>
#include <set>
#include <string>

#include "core/error.h"
#include "media/image_reader.h"
#include "media/png_sequence_writer.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// [n, H, W, 3] uint8: every byte a function of (frame, index), so a swapped or shifted frame shows.
Tensor frames(int64_t first, int64_t n, int64_t h, int64_t w) {
  Tensor t = Tensor::empty({n, h, w, 3}, DType::U8);
  for (int64_t f = 0; f < n; ++f)
    for (int64_t i = 0; i < h * w * 3; ++i)
      t.data<uint8_t>()[f * h * w * 3 + i] = static_cast<uint8_t>((first + f) * 40 + i * 7);
  return t;
}

}  // namespace

TEST_CASE("png sequence: frame patterns: %d or %0Nd in a file name ending .png, in a folder of its own") {
  const media::FramePattern p = media::parse_frame_pattern("out/clip/frame_%05d.png");
  REQUIRE(p.folder == "out/clip");
  REQUIRE(p.prefix == "frame_");
  REQUIRE(p.suffix == ".png");
  REQUIRE(p.digits == 5);
  REQUIRE(p.file_name(7) == "frame_00007.png");
  REQUIRE(p.file_name(123456) == "frame_123456.png");
  REQUIRE(p.matches("frame_00007.png"));
  REQUIRE(p.matches("frame_123456.png"));
  REQUIRE_FALSE(p.matches("frame_0007.png"));
  REQUIRE_FALSE(p.matches("frame_0000x.png"));
  REQUIRE_FALSE(p.matches("other_00007.png"));
  const media::FramePattern plain = media::parse_frame_pattern("a//b/./%d_x.png");
  REQUIRE(plain.folder == "a/b");
  REQUIRE(plain.digits == 0);
  REQUIRE(plain.file_name(0) == "0_x.png");
  REQUIRE(plain.file_name(12) == "12_x.png");
  REQUIRE(media::is_frame_pattern("f/%05d.png"));
  REQUIRE_FALSE(media::is_frame_pattern("f%/a.mp4"));
  const auto refused = [](const std::string& path, const char* why) {
    REQUIRE_THROWS_WITH(media::parse_frame_pattern(path), Contains(why));
  };
  refused("%05d.png", "a folder of its own");
  refused("./%05d.png", "a folder of its own");
  refused("/%05d.png", "a folder of its own");
  refused("../%05d.png", "a folder of its own");
  refused("f/%5d.png", "bad frame number");
  refused("f/%00d.png", "bad frame number");
  refused("f/%010d.png", "bad frame number");
  refused("f/%s.png", "bad frame number");
  refused("f/%", "bad frame number");
  refused("f/%05d_%d.png", "more than one '%'");
  refused("f/%05d.jpg", "must end in .png");
  refused("f/%05d.PNG", "must end in .png");
  refused("f%d/%05d.png", "only be in the file name");
}

TEST_CASE("png sequence: every frame an RGB PNG numbered from 0, the audio beside them, in place at finish") {
  test::ScratchDir dir("png_sequence");
  const std::string path = dir.file("clip/%03d.png");
  {
    media::PngSequenceWriter w(path, {5, 3, 16000});
    w.write_video(frames(0, 2, 3, 5));  // two chunks
    w.write_video(frames(2, 1, 3, 5));
    w.write_audio(Tensor::full({2, 10}, 0.5f));
    REQUIRE_THROWS_WITH(w.write_video(frames(0, 1, 5, 3)), Contains("are not uint8 [n, 3, 5, 3]"));
    REQUIRE_FALSE(fs::exists(dir.file("clip")));  // nothing in place before finish()
    w.finish();
  }
  REQUIRE(test::names_in(dir.path()) == std::set<std::string>{"clip"});  // no temporary folder left
  REQUIRE(test::names_in(dir.file("clip")) == std::set<std::string>{"000.png", "001.png", "002.png", "audio.wav"});
  for (int f = 0; f < 3; ++f) {
    const Tensor img = media::read_image(dir.file("clip/00" + std::to_string(f) + ".png"));
    REQUIRE(img.shape() == Shape{3, 5, 3});
    const Tensor want = frames(f, 1, 3, 5).select(0, 0);
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t x = 0; x < 5; ++x)
        for (int64_t c = 0; c < 3; ++c)
          REQUIRE(img.item({y, x, c}) == static_cast<float>(want.data<uint8_t>()[(y * 5 + x) * 3 + c]));
  }
  // The WAV beside them: 10 stereo samples at 16 kHz (the format itself: test_wav_writer.cpp).
  REQUIRE(fs::file_size(dir.file("clip/audio.wav")) == 44 + 10 * 4);
}

TEST_CASE("png sequence: an earlier sequence is replaced whole, but never a folder holding anything else") {
  test::ScratchDir dir("png_sequence_replace");
  const std::string path = dir.file("seq/%02d.png");
  const auto write = [&](int64_t n, int audio_rate) {
    media::PngSequenceWriter w(path, {2, 2, audio_rate});
    w.write_video(frames(0, n, 2, 2));
    if (audio_rate > 0) w.write_audio(Tensor::zeros({2, 4}));
    w.finish();
  };
  write(4, 16000);
  REQUIRE(test::names_in(dir.file("seq")).size() == 5);
  write(2, 0);  // fewer frames, no audio: nothing of the earlier run stays
  REQUIRE(test::names_in(dir.file("seq")) == std::set<std::string>{"00.png", "01.png"});
  REQUIRE(test::names_in(dir.path()) == std::set<std::string>{"seq"});

  test::write_bytes(dir.file("seq/notes.txt"), "mine");
  const media::FramePattern pattern = media::parse_frame_pattern(path);
  REQUIRE_THROWS_WITH(media::check_sequence_folder(pattern),
                      Contains("holds notes.txt, which this pattern does not write"));
  {
    media::PngSequenceWriter w(path, {2, 2, 0});
    w.write_video(frames(0, 1, 2, 2));
    REQUIRE_THROWS_WITH(w.finish(), Contains(path) && Contains("notes.txt"));
  }
  REQUIRE(test::names_in(dir.file("seq")) == std::set<std::string>{"00.png", "01.png", "notes.txt"});
  REQUIRE(test::names_in(dir.path()) == std::set<std::string>{"seq"});
  test::write_bytes(dir.file("file"), "x");
  REQUIRE_THROWS_WITH(media::check_sequence_folder(media::parse_frame_pattern(dir.file("file/%d.png"))),
                      Contains("is not a folder"));
  fs::create_directory(dir.file("empty"));
  REQUIRE_NOTHROW(media::check_sequence_folder(media::parse_frame_pattern(dir.file("empty/%d.png"))));
}

TEST_CASE("png sequence: destroyed before finish it leaves nothing, and no frames is no finish") {
  test::ScratchDir dir("png_sequence_gone");
  {
    media::PngSequenceWriter w(dir.file("gone/%d.png"), {2, 2, 16000});
    w.write_video(frames(0, 3, 2, 2));
    w.write_audio(Tensor::zeros({2, 8}));
  }
  REQUIRE(test::names_in(dir.path()).empty());
  media::PngSequenceWriter empty(dir.file("empty/%d.png"), {2, 2, 0});
  REQUIRE_THROWS_WITH(empty.finish(), Contains("no frames"));
  REQUIRE_THROWS_WITH(empty.write_audio(Tensor::zeros({2, 1})), Contains("without an audio rate"));
  REQUIRE_THROWS_WITH(media::PngSequenceWriter(dir.file("no/such/%d.png"), {2, 2, 0}),
                      Contains("cannot create the folder"));
  REQUIRE_THROWS_WITH(media::PngSequenceWriter(dir.file("x/%d.jpg"), {2, 2, 0}),
                      Contains("must end in .png"));
}
