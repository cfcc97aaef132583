// MP4 writer: a short clip checked with ffprobe (streams, sizes, rate, frame count, colour tags,
// audio duration), byte-identical output on a repeat (and chunked) run, and no file on failure;
// its RGB -> YUV conversion (libswscale) against the reference's float formulas.
#if LTX2_WITH_MEDIA
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "media/ffmpeg/mp4_writer.h"
#include "media/ffmpeg/rgb_to_yuv.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

constexpr int kFrames = 9, kHeight = 64, kWidth = 96, kRate = 24000, kSamples = 9000;

Tensor test_frames() {
  Tensor t = Tensor::empty({kFrames, kHeight, kWidth, 3}, DType::U8);
  uint8_t* p = t.data<uint8_t>();
  for (int f = 0; f < kFrames; ++f)
    for (int y = 0; y < kHeight; ++y)
      for (int x = 0; x < kWidth; ++x) {
        uint8_t* px = p + ((int64_t(f) * kHeight + y) * kWidth + x) * 3;
        px[0] = static_cast<uint8_t>(255 * x / kWidth);
        px[1] = static_cast<uint8_t>(255 * y / kHeight);
        px[2] = static_cast<uint8_t>(255 * ((x + y + 8 * f) % 32) / 31);
      }
  return t;
}

// A test image with smooth ramps, sharp edges, saturated colours and noise: [h, w, 3] uint8.
std::vector<uint8_t> test_image(int h, int w) {
  std::vector<uint8_t> rgb(static_cast<size_t>(h) * w * 3);
  uint64_t s = 7;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double noise = static_cast<double>((s >> 40) & 255) / 255.0;
        double v = c == 0   ? double(x) / w
                   : c == 1 ? double(y) / h
                            : 0.5 + 0.5 * std::sin(0.05 * x + 0.031 * y);
        if ((x / 16 + y / 16) % 5 == 0) v = c == 1 ? 1.0 : 0.0;  // saturated green squares
        rgb[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(255.0 * (0.7 * v + 0.3 * noise));
      }
  return rgb;
}

struct Planes {
  int h, w;
  std::vector<uint8_t> y, u, v;  // packed: w and w / 2 bytes per row
  Planes(int h_, int w_) : h(h_), w(w_), y(size_t(h) * w), u(size_t(h) * w / 4), v(size_t(h) * w / 4) {}
};

// The reference's conversion (ltx_core/color/yuv.py, in float32 on frames in [0, 1]): BT.709
// matrix, chroma averaged over 2x2 blocks, Y * 219 + 16, C * 224 + 128, clamped and truncated.
Planes reference_i420(const std::vector<uint8_t>& rgb, int h, int w) {
  Planes out(h, w);
  std::vector<float> cb(size_t(h) * w), cr(size_t(h) * w);
  auto u8 = [](float v) { return static_cast<uint8_t>(std::clamp(v, 0.f, 255.f)); };
  for (int i = 0; i < h * w; ++i) {
    const float r = rgb[3 * i] / 255.f, g = rgb[3 * i + 1] / 255.f, b = rgb[3 * i + 2] / 255.f;
    out.y[i] = u8((0.2126f * r + 0.7152f * g + 0.0722f * b) * 219.f + 16.f);
    cb[i] = -0.1146f * r - 0.3854f * g + 0.5f * b;
    cr[i] = 0.5f * r - 0.4542f * g - 0.0458f * b;
  }
  for (int y = 0; y < h / 2; ++y)
    for (int x = 0; x < w / 2; ++x) {
      const int i = 2 * y * w + 2 * x, o = y * (w / 2) + x;
      out.u[o] = u8((cb[i] + cb[i + 1] + cb[i + w] + cb[i + w + 1]) / 4.f * 224.f + 128.f);
      out.v[o] = u8((cr[i] + cr[i + 1] + cr[i + w] + cr[i + w + 1]) / 4.f * 224.f + 128.f);
    }
  return out;
}

Planes swscale_i420(const std::vector<uint8_t>& rgb, int h, int w, int threads) {
  Planes out(h, w);
  media::RgbToYuv420 convert(w, h, threads);
  uint8_t* planes[3] = {out.y.data(), out.u.data(), out.v.data()};
  const int linesizes[3] = {w, w / 2, w / 2};
  convert.convert(rgb.data(), planes, linesizes);
  return out;
}

// PSNR (dB) and the largest difference of two planes.
std::pair<double, int> psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double se = 0;
  int worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int d = int(a[i]) - int(b[i]);
    se += double(d) * d;
    worst = std::max(worst, std::abs(d));
  }
  const double mse = se / static_cast<double>(a.size());
  return {mse == 0 ? INFINITY : 10 * std::log10(255.0 * 255.0 / mse), worst};
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
  const std::string a = test::read_bytes(dir.file("a.mp4"));
  REQUIRE(a.size() > 1000);
  REQUIRE(a == test::read_bytes(dir.file("b.mp4")));
  REQUIRE(a == test::read_bytes(dir.file("c.mp4")));
  // The conversion's thread count changes nothing; the encoder's is fixed here (3 frame threads).
  for (int convert_threads : {1, 4}) {
    media::Mp4Options t = o;
    t.encoder_threads = 3;
    t.convert_threads = convert_threads;
    media::Mp4Writer tw(dir.file(fmt::format("t{}.mp4", convert_threads)), t);
    tw.write_video(frames);
    tw.write_audio(audio);
    tw.finish();
    const media::Mp4Timings timings = tw.timings();
    CHECK(timings.frames == kFrames);
    CHECK(timings.convert_seconds > 0);
    CHECK(timings.encode_seconds > 0);
  }
  REQUIRE(test::read_bytes(dir.file("t1.mp4")) == test::read_bytes(dir.file("t4.mp4")));
}

TEST_CASE("mp4 writer: libswscale's BT.709 conversion is within one code value of the reference's") {
  constexpr int h = 256, w = 384;
  const std::vector<uint8_t> rgb = test_image(h, w);
  const Planes want = reference_i420(rgb, h, w), got = swscale_i420(rgb, h, w, 1);
  const std::pair<const char*, std::pair<const std::vector<uint8_t>*, const std::vector<uint8_t>*>> planes[] =
      {{"Y", {&got.y, &want.y}}, {"U", {&got.u, &want.u}}, {"V", {&got.v, &want.v}}};
  for (const auto& [name, pair] : planes) {
    const auto [db, worst] = psnr(*pair.first, *pair.second);
    std::printf(
        "rgb -> yuv420p, swscale vs the reference's float conversion: %s %.1f dB, max difference %d\n", name,
        db, worst);
    INFO(name << ": " << db << " dB, max difference " << worst);
    CHECK(worst <= 1);
    CHECK(db >= 50.0);
  }
  // The slices of a threaded conversion give the same bytes.
  const Planes threaded = swscale_i420(rgb, h, w, 3);
  CHECK(threaded.y == got.y);
  CHECK(threaded.u == got.u);
  CHECK(threaded.v == got.v);
  REQUIRE_THROWS_WITH(media::RgbToYuv420(7, 8, 1), Contains("even"));
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
    REQUIRE_THROWS_WITH(w.write_video(Tensor::zeros({1, 8, 8, 3}, DType::U8)), Contains("x.mp4"));
  }
  REQUIRE(files_in(dir.path()) == 0);
  REQUIRE_THROWS_WITH(media::write_mp4(dir.file("odd.mp4"), Tensor::zeros({1, 7, 8, 3}, DType::U8), 24.0),
                      Contains("even"));
  {
    media::Mp4Writer w(dir.file("f.mp4"), o);
    REQUIRE_THROWS_WITH(w.write_video(Tensor::zeros({1, kHeight, kWidth, 3})), Contains("uint8"));
  }
  REQUIRE_THROWS_WITH(media::write_mp4(dir.file("missing/dir/y.mp4"), test_frames(), 24.0),
                      Contains("y.mp4"));
  {
    media::Mp4Writer w(dir.file("z.mp4"), o);
    REQUIRE_THROWS_WITH(w.finish(), Contains("no video frames"));
  }
  REQUIRE(files_in(dir.path()) == 0);
}
#endif
