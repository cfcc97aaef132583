// The .y4m + .wav clip writer: the bytes of both files (header, planes, PCM), what appears when,
// and nothing left behind by a writer that does not finish.
#include <filesystem>
#include <string>

#include "media/y4m_wav_writer.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
namespace fs = std::filesystem;

namespace {

// [n, H, W, 3] uint8: frame f is uniform grey 255 * f / (n - 1) (truncated), except pixel (0, 0) of
// frame 0: pure red.
Tensor frames(int64_t n, int64_t h, int64_t w) {
  Tensor t = Tensor::empty({n, h, w, 3}, DType::U8);
  uint8_t* p = t.data<uint8_t>();
  for (int64_t f = 0; f < n; ++f)
    for (int64_t i = 0; i < h * w * 3; ++i)
      p[(f * h * w * 3) + i] = static_cast<uint8_t>(n > 1 ? 255 * f / (n - 1) : 0);
  p[0] = 255;
  p[1] = 0;
  p[2] = 0;
  return t;
}

}  // namespace

TEST_CASE("y4m+wav: headers, planes and PCM are what players expect") {
  test::ScratchDir dir("y4m");
  const std::string path = dir.file("clip.y4m");
  {
    media::Y4mWavWriter w(path, {4, 2, 24, 16000});
    w.write_video(frames(3, 2, 4).slice(0, 0, 2));  // two chunks
    w.write_video(frames(3, 2, 4).slice(0, 2, 3));
    Tensor audio = Tensor::empty({2, 5});
    const float left[5] = {0.f, 0.5f, -0.5f, 2.f, -2.f};
    for (int i = 0; i < 5; ++i) {
      audio.data<float>()[i] = left[i];
      audio.data<float>()[5 + i] = -left[i];
    }
    REQUIRE_FALSE(fs::exists(path));  // nothing in place before finish()
    w.write_audio(audio);
    w.finish();
  }
  const std::string y4m = test::read_bytes(path);
  const std::string header = "YUV4MPEG2 W4 H2 F24:1 Ip A1:1 C444 XCOLORRANGE=LIMITED\n";
  REQUIRE(y4m.substr(0, header.size()) == header);
  const size_t frame_bytes = 6 + 3 * 8;
  REQUIRE(y4m.size() == header.size() + 3 * frame_bytes);
  auto plane = [&](int f, int p, int i) {
    return static_cast<uint8_t>(y4m[header.size() + f * frame_bytes + 6 + p * 8 + i]);
  };
  REQUIRE(y4m.substr(header.size(), 6) == "FRAME\n");
  // Frame 0: red at (0, 0) (BT.709 limited, truncated: Y 62, Cb 102, Cr 240), black elsewhere (16, 128, 128).
  REQUIRE(plane(0, 0, 0) == 62);
  REQUIRE(plane(0, 1, 0) == 102);
  REQUIRE(plane(0, 2, 0) == 240);
  REQUIRE(plane(0, 0, 1) == 16);
  REQUIRE(plane(0, 1, 1) == 128);
  REQUIRE(plane(2, 0, 5) == 235);  // white
  REQUIRE(plane(1, 0, 3) == 125);  // grey 127: 16 + 109.07, truncated

  const std::string wav = test::read_bytes(media::wav_path_for(path));
  REQUIRE(wav.substr(0, 4) == "RIFF");
  REQUIRE(wav.substr(8, 8) == "WAVEfmt ");
  REQUIRE(test::le_u32(wav, 24) == 16000);
  REQUIRE(test::le_u32(wav, 40) == 5 * 4);
  REQUIRE(test::le_u32(wav, 4) == 36 + 5 * 4);
  REQUIRE(wav.size() == 44 + 20);
  auto sample = [&](int i, int c) {
    return static_cast<int16_t>(static_cast<uint8_t>(wav[44 + 4 * i + 2 * c]) |
                                static_cast<uint8_t>(wav[45 + 4 * i + 2 * c]) << 8);
  };
  REQUIRE(sample(1, 0) == 16383);  // 0.5 * 32767, truncated
  REQUIRE(sample(1, 1) == -16383);
  REQUIRE(sample(3, 0) == 32767);  // clipped
  REQUIRE(sample(4, 0) == -32767);
}

TEST_CASE("y4m+wav: fractional rates, no audio, bad input, and no files from a writer that never finished") {
  test::ScratchDir dir("y4m-edge");
  const std::string path = dir.file("clip.y4m");
  {
    media::Y4mWavWriter w(path, {2, 2, 23.976, 0});
    w.write_video(frames(2, 2, 2));
    REQUIRE_THROWS_WITH(w.write_video(frames(1, 2, 4)),
                        Catch::Matchers::Contains("are not uint8 [n, 2, 2, 3]"));
    REQUIRE_THROWS_WITH(w.write_video(Tensor::zeros({1, 2, 2, 3})), Catch::Matchers::Contains("uint8"));
    REQUIRE_THROWS_WITH(w.write_audio(Tensor::zeros({2, 4})),
                        Catch::Matchers::Contains("without an audio rate"));
    w.finish();
  }
  REQUIRE(test::read_bytes(path).find(" F2997:125 ") != std::string::npos);
  REQUIRE_FALSE(fs::exists(media::wav_path_for(path)));
  {
    media::Y4mWavWriter w(dir.file("gone.y4m"), {2, 2, 24, 16000});
    w.write_video(frames(2, 2, 2));
    w.write_audio(Tensor::zeros({2, 8}));
  }  // destroyed unfinished: an error or an interrupt
  for (const auto& e : fs::directory_iterator(dir.path())) REQUIRE(e.path().filename() == "clip.y4m");
  REQUIRE_THROWS_WITH(media::Y4mWavWriter(dir.file("no/such/dir.y4m"), {2, 2, 24, 0}),
                      Catch::Matchers::Contains("cannot create"));
  REQUIRE_THROWS_WITH(media::Y4mWavWriter(dir.file("x.y4m"), {0, 2, 24, 0}),
                      Catch::Matchers::Contains("empty"));
}
