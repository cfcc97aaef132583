// The audio-only clip (.wav): the header fields and samples players read, what appears when, and
// nothing left by a writer that never finished.
#include <filesystem>
#include <string>

#include "core/error.h"
#include "media/wav_writer.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("wav writer: 16-bit PCM stereo at the given rate, samples clipped, scaled by 32767, truncated") {
  test::ScratchDir dir("wav_writer");
  const std::string path = dir.file("sound.wav");
  {
    media::WavWriter w(path, 48000);
    const float left[4] = {0.f, 0.25f, -1.5f, 0.999f};
    Tensor first = Tensor::empty({2, 4});
    for (int i = 0; i < 4; ++i) {
      first.data<float>()[i] = left[i];
      first.data<float>()[4 + i] = -left[i] / 2;
    }
    w.write_audio(first);
    w.write_audio(Tensor::full({2, 3}, 1.0f).to(DType::BF16));  // a second chunk, another dtype
    REQUIRE_THROWS_WITH(w.write_video(Tensor::zeros({1, 2, 2, 3}, DType::U8)), Contains("audio only"));
    REQUIRE_THROWS_WITH(w.write_audio(Tensor::zeros({1, 4})), Contains("is not [2, N]"));
    REQUIRE_FALSE(fs::exists(path));  // nothing in place before finish()
    w.finish();
  }
  REQUIRE(test::names_in(dir.path()) == std::set<std::string>{"sound.wav"});  // no temporary left
  const std::string wav = test::read_bytes(path);
  REQUIRE(wav.size() == 44 + 7 * 4);
  REQUIRE(wav.substr(0, 4) == "RIFF");
  REQUIRE(test::le_u32(wav, 4) == 36 + 7 * 4);
  REQUIRE(wav.substr(8, 8) == "WAVEfmt ");
  REQUIRE(test::le_u32(wav, 16) == 16);     // fmt chunk size
  REQUIRE(test::le_u16(wav, 20) == 1);      // PCM
  REQUIRE(test::le_u16(wav, 22) == 2);      // channels
  REQUIRE(test::le_u32(wav, 24) == 48000);  // sample rate
  REQUIRE(test::le_u32(wav, 28) == 48000 * 4);
  REQUIRE(test::le_u16(wav, 32) == 4);   // block align
  REQUIRE(test::le_u16(wav, 34) == 16);  // bits per sample
  REQUIRE(wav.substr(36, 4) == "data");
  REQUIRE(test::le_u32(wav, 40) == 7 * 4);
  const auto sample = [&](int i, int c) { return static_cast<int16_t>(test::le_u16(wav, 44 + 4 * i + 2 * c)); };
  REQUIRE(sample(0, 0) == 0);
  REQUIRE(sample(1, 0) == 8191);    // 0.25 * 32767 = 8191.75, truncated
  REQUIRE(sample(1, 1) == -4095);   // -0.125 * 32767 = -4095.875, truncated toward zero
  REQUIRE(sample(2, 0) == -32767);  // clipped to -1
  REQUIRE(sample(2, 1) == 24575);   // 0.75 * 32767 = 24575.25
  REQUIRE(sample(3, 0) == 32734);   // 0.999 * 32767 = 32734.2
  REQUIRE(sample(6, 0) == 32767);
  REQUIRE(sample(6, 1) == 32767);
}

TEST_CASE("wav writer: destroyed before finish it leaves nothing, a bad rate or folder is refused") {
  test::ScratchDir dir("wav_writer_gone");
  {
    media::WavWriter w(dir.file("gone.wav"), 16000);
    w.write_audio(Tensor::zeros({2, 16}));
  }
  REQUIRE(test::names_in(dir.path()).empty());
  REQUIRE_THROWS_WITH(media::WavWriter(dir.file("x.wav"), 0), Contains("sample rate 0"));
  REQUIRE_THROWS_WITH(media::WavWriter(dir.file("no/such/x.wav"), 16000), Contains("cannot create"));
  media::WavWriter twice(dir.file("twice.wav"), 16000);
  twice.write_audio(Tensor::zeros({2, 1}));
  twice.finish();
  REQUIRE_THROWS_WITH(twice.finish(), Contains("already finished"));
  REQUIRE_THROWS_WITH(twice.write_audio(Tensor::zeros({2, 1})), Contains("already finished"));
}
