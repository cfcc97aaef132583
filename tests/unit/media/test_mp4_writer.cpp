// MP4 writer: a short clip checked with ffprobe (streams, sizes, rate, frame count, colour tags,
// audio duration), byte-identical output on a repeat (and chunked) run, and no file on failure.
#if LTX2_WITH_MEDIA
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "media/ffmpeg/mp4_writer.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

constexpr int kFrames = 9, kHeight = 64, kWidth = 96, kRate = 24000, kSamples = 9000;

Tensor test_frames() {
  Tensor t = Tensor::empty({kFrames, kHeight, kWidth, 3});
  float* p = t.data<float>();
  for (int f = 0; f < kFrames; ++f)
    for (int y = 0; y < kHeight; ++y)
      for (int x = 0; x < kWidth; ++x) {
        float* px = p + ((int64_t(f) * kHeight + y) * kWidth + x) * 3;
        px[0] = float(x) / kWidth;
        px[1] = float(y) / kHeight;
        px[2] = float((x + y + 8 * f) % 32) / 31.0f;
      }
  return t;
}

Tensor test_audio() {
  Tensor t = Tensor::empty({2, kSamples});
  float* p = t.data<float>();
  for (int i = 0; i < kSamples; ++i) {
    p[i] = 0.5f * std::sin(2 * 3.14159265f * 440.0f * i / kRate);
    p[kSamples + i] = 0.3f * std::sin(2 * 3.14159265f * 660.0f * i / kRate);
  }
  return t;
}

std::string run(const std::string& cmd) {
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  REQUIRE(pclose(pipe) == 0);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t files_in(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

}  // namespace

TEST_CASE("mp4 writer: ffprobe sees one h264 and one aac stream with the right properties") {
  test::ScratchDir dir("mp4");
  const std::string path = dir.file("clip.mp4");
  media::write_mp4(path, test_frames(), 24.0, test_audio(), kRate);
  REQUIRE(files_in(dir.path()) == 1);
  const auto probe = nlohmann::json::parse(run(
      "ffprobe -v error -count_frames -show_entries stream=codec_type,codec_name,width,height,r_frame_rate,"
      "nb_read_frames,pix_fmt,color_space,color_primaries,color_transfer,color_range,sample_rate,channels,"
      "duration -of json '" +
      path + "'"));
  const auto& streams = probe.at("streams");
  REQUIRE(streams.size() == 2);
  int videos = 0, audios = 0;
  for (const auto& s : streams) {
    if (s.at("codec_type") == "video") {
      ++videos;
      REQUIRE(s.at("codec_name") == "h264");
      REQUIRE(s.at("width") == kWidth);
      REQUIRE(s.at("height") == kHeight);
      REQUIRE(s.at("r_frame_rate") == "24/1");
      REQUIRE(std::fabs(std::stod(s.at("duration").get<std::string>()) - kFrames / 24.0) < 1e-6);
      REQUIRE(s.at("nb_read_frames") == std::to_string(kFrames));
      REQUIRE(s.at("pix_fmt") == "yuv420p");
      REQUIRE(s.at("color_space") == "bt709");
      REQUIRE(s.at("color_primaries") == "bt709");
      REQUIRE(s.at("color_transfer") == "bt709");
      REQUIRE(s.at("color_range") == "tv");
    } else {
      ++audios;
      REQUIRE(s.at("codec_name") == "aac");
      REQUIRE(s.at("sample_rate") == std::to_string(kRate));
      REQUIRE(s.at("channels") == 2);
      const double duration = std::stod(s.at("duration").get<std::string>());
      REQUIRE(std::fabs(duration - double(kSamples) / kRate) < 1024.0 / kRate);
    }
  }
  REQUIRE(videos == 1);
  REQUIRE(audios == 1);
}

TEST_CASE("mp4 writer: the same input gives the same bytes, in one call or in chunks") {
  test::ScratchDir dir("mp4_repeat");
  const Tensor frames = test_frames(), audio = test_audio();
  media::write_mp4(dir.file("a.mp4"), frames, 24.0, audio, kRate);
  media::write_mp4(dir.file("b.mp4"), frames, 24.0, audio, kRate);
  media::Mp4Options o;
  o.width = kWidth;
  o.height = kHeight;
  o.fps = 24.0;
  o.audio_sample_rate = kRate;
  media::Mp4Writer w(dir.file("c.mp4"), o);
  w.write_video(frames.slice(0, 0, 4));
  w.write_video(frames.slice(0, 4, kFrames));
  w.write_audio(audio.slice(1, 0, 5000));
  w.write_audio(audio.slice(1, 5000, kSamples));
  w.finish();
  const std::string a = slurp(dir.file("a.mp4"));
  REQUIRE(a.size() > 1000);
  REQUIRE(a == slurp(dir.file("b.mp4")));
  REQUIRE(a == slurp(dir.file("c.mp4")));
}

TEST_CASE("mp4 writer: a failure leaves no file behind") {
  test::ScratchDir dir("mp4_fail");
  media::Mp4Options o;
  o.width = kWidth;
  o.height = kHeight;
  o.audio_sample_rate = kRate;
  {
    media::Mp4Writer w(dir.file("x.mp4"), o);
    REQUIRE(files_in(dir.path()) == 1);  // the temporary file
    w.write_video(test_frames().slice(0, 0, 2));
    REQUIRE_THROWS_WITH(w.write_video(Tensor::zeros({1, 8, 8, 3})), Contains("x.mp4"));
  }
  REQUIRE(files_in(dir.path()) == 0);
  REQUIRE_THROWS_WITH(media::write_mp4(dir.file("odd.mp4"), Tensor::zeros({1, 7, 8, 3}), 24.0),
                      Contains("even"));
  REQUIRE_THROWS_WITH(media::write_mp4(dir.file("missing/dir/y.mp4"), test_frames(), 24.0),
                      Contains("y.mp4"));
  {
    media::Mp4Writer w(dir.file("z.mp4"), o);
    REQUIRE_THROWS_WITH(w.finish(), Contains("no video frames"));
  }
  REQUIRE(files_in(dir.path()) == 0);
}
#endif
