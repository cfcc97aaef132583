// Conditioning images in PNG, JPEG and WebP against the RGB arrays PIL gives for them (the
// reference's decode_image; tests/data/media/generators/make_images.py writes both), and the
// refusals: other formats, EXR, truncated and oversized files, animated WebP, a build without
// FFmpeg.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "media/image_reader.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

std::string data_file(const std::string& name) {
  return std::string(LTX2_SOURCE_DIR) + "/tests/data/media/" + name;
}

// A binary PPM as make_images.py writes it ("P6\n<w> <h>\n255\n" then the RGB bytes), as [H, W, 3].
Tensor read_ppm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::string magic;
  int64_t w = 0, h = 0, max = 0;
  in >> magic >> w >> h >> max;
  in.get();
  REQUIRE(magic == "P6");
  REQUIRE(max == 255);
  const std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in), {}};
  REQUIRE(bytes.size() == static_cast<size_t>(w * h * 3));
  Tensor t = Tensor::empty({h, w, 3});
  for (size_t i = 0; i < bytes.size(); ++i) t.data<float>()[i] = bytes[i];
  return t;
}

struct Difference {
  float max = 0;
  double mean = 0;
};

Difference difference(const Tensor& a, const Tensor& b) {
  Difference d;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float e = std::fabs(a.data<float>()[i] - b.data<float>()[i]);
    d.max = std::max(d.max, e);
    d.mean += e;
  }
  d.mean /= static_cast<double>(a.numel());
  return d;
}

struct Case {
  const char* file;
  int64_t stored_width, stored_height;  // read_image_size's answer, before the orientation
  float max_diff;                       // against PIL's array
  double max_mean_diff;
};

// PNG and lossless WebP are exact. JPEG: FFmpeg's IDCT is not libjpeg's, which moves a few samples
// by one level before the colour conversion; measured (FFmpeg 5.1, Pillow 11's libjpeg-turbo) at
// most 2 levels, mean 0.10 on photo.jpg and at most 1 on grey.jpg: 3 and 0.25 allowed. Lossy WebP:
// the VP8 decode is exact, the chroma rounding differs from libwebp's: measured at most 1 level
// (mean 0.007), 1 and 0.05 allowed.
const Case kCases[] = {
    {"photo.png", 40, 24, 0, 0},     // EXIF orientation 3 (eXIf chunk): turned by 180 degrees
    {"mirrored.png", 40, 24, 0, 0},  // orientation 5: left as stored, as the reference leaves it
    {"rgba.png", 40, 24, 0, 0},      // alpha dropped
    {"wide_profile.png", 40, 24, 0, 0},
    {"photo.jpg", 40, 24, 3, 0.25},   // 4:2:0, orientation 6 (a quarter turn clockwise), sRGB profile
    {"grey.jpg", 40, 24, 3, 0.25},    // one channel, repeated
    {"lossless.webp", 40, 24, 0, 0},  // VP8L with alpha, orientation 8 (a quarter turn anticlockwise)
    {"lossy.webp", 40, 24, 1, 0.05},  // VP8 with alpha (4:2:0, limited range)
};

}  // namespace

TEST_CASE("image formats: PNG, JPEG and WebP decode to PIL's RGB, turned as the reference turns them") {
  for (const Case& c : kCases) {
    INFO(c.file);
    const std::string path = data_file(c.file);
#if !LTX2_WITH_MEDIA
    if (!path.ends_with(".png")) {
      REQUIRE_THROWS_WITH(media::read_image(path), Contains(path) && Contains("lacks FFmpeg"));
      REQUIRE_THROWS_WITH(media::read_image_size(path), Contains(path) && Contains("lacks FFmpeg"));
      continue;
    }
#endif
    const media::ImageSize size = media::read_image_size(path);
    CHECK(size.width == c.stored_width);
    CHECK(size.height == c.stored_height);
    const Tensor expected = read_ppm(path + ".ppm");
    const Tensor got = media::read_image(path);
    REQUIRE(got.dtype() == DType::F32);
    REQUIRE(got.shape() == expected.shape());
    const Difference d = difference(got, expected);
    CHECK(d.max <= c.max_diff);
    CHECK(d.mean <= c.max_mean_diff);
  }
}

TEST_CASE("image formats: a colour profile that is not sRGB is warned about once per file, values kept") {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  spdlog::default_logger()->sinks().push_back(sink);
  const std::string wide = data_file("wide_profile.png");
  const Tensor first = media::read_image(wide);
  const Tensor second = media::read_image(wide);
#if LTX2_WITH_MEDIA
  media::read_image(data_file("photo.jpg"));  // an sRGB profile: nothing to say
#endif
  spdlog::default_logger()->sinks().pop_back();
  const std::string log = captured.str();
  CHECK(std::count(log.begin(), log.end(), '\n') == 1);
  CHECK_THAT(log, Contains(wide) && Contains("'Wide built-in'") && Contains("not sRGB"));
  CHECK(difference(first, read_ppm(wide + ".ppm")).max == 0);
  CHECK(difference(second, first).max == 0);
}

TEST_CASE("image formats: other formats and EXR are refused in one line naming the file") {
  test::ScratchDir dir("image_formats");
  test::write_bytes(dir.file("linear.exr"), std::string("\x76\x2f\x31\x01\x02\x00\x00\x00", 8));
  test::write_bytes(dir.file("empty.jpg"), "");
  for (const std::string& path :
       {data_file("not_an_image.png"), data_file("photo.gif"), dir.file("empty.jpg")}) {
    INFO(path);
    const auto message = Contains(path + ": not a PNG, JPEG or WebP image");
    REQUIRE_THROWS_WITH(media::read_image(path), message);
    REQUIRE_THROWS_WITH(media::read_image_size(path), message);
  }
  REQUIRE_THROWS_WITH(media::read_image_size(dir.file("linear.exr")),
                      Contains(dir.file("linear.exr") + ": an OpenEXR image") && Contains("HDR path"));
  REQUIRE_THROWS_WITH(media::read_image(dir.file("none.webp")),
                      Contains(dir.file("none.webp") + ": cannot open the image"));
}

#if LTX2_WITH_MEDIA
TEST_CASE("image formats: truncated, corrupt, oversized and animated files are refused naming the file") {
  // Cut inside the compressed data: the header (and so the probe) is whole, the decode fails.
  const std::string truncated = data_file("truncated.jpg");
  CHECK(media::read_image_size(truncated).width == 40);
  REQUIRE_THROWS_WITH(media::read_image(truncated),
                      Contains(truncated + ": cannot decode the JPEG") && Contains("corrupt or truncated"));

  // A frame header declaring 40 x 9000 pixels: refused from the header, before any decoding.
  const std::string oversized = data_file("oversized.jpg");
  for (const auto& read : {+[](const std::string& p) { media::read_image_size(p); },
                           +[](const std::string& p) { media::read_image(p); }})
    REQUIRE_THROWS_WITH(read(oversized), Contains(oversized + ": 40x9000 pixels, more than the 8192x8192"));

  test::ScratchDir dir("image_formats_bad");
  std::ifstream jpeg(data_file("photo.jpg"), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(jpeg), {}};
  test::write_bytes(dir.file("cut_header.jpg"), bytes.substr(0, 40));
  REQUIRE_THROWS_WITH(media::read_image_size(dir.file("cut_header.jpg")),
                      Contains(dir.file("cut_header.jpg") + ": truncated JPEG header"));

  // WebP headers: an extended one declaring a 10000 x 10000 canvas, and one marked animated.
  const auto webp_vp8x = [](uint8_t flags, uint32_t w, uint32_t h) {
    std::string s =
        "RIFF" + std::string("\x16\x00\x00\x00", 4) + "WEBPVP8X" + std::string("\x0a\x00\x00\x00", 4);
    s += static_cast<char>(flags);
    s += std::string(3, '\0');
    for (const uint32_t v : {w - 1, h - 1})
      for (int i = 0; i < 3; ++i) s += static_cast<char>(v >> (8 * i) & 0xFF);
    return s;
  };
  test::write_bytes(dir.file("canvas.webp"), webp_vp8x(0, 10000, 10000));
  REQUIRE_THROWS_WITH(media::read_image(dir.file("canvas.webp")),
                      Contains(dir.file("canvas.webp") + ": 10000x10000 pixels, more than the 8192x8192"));
  test::write_bytes(dir.file("anim.webp"), webp_vp8x(0x02, 8, 8));
  REQUIRE_THROWS_WITH(media::read_image_size(dir.file("anim.webp")),
                      Contains(dir.file("anim.webp") + ": an animated WebP"));
}
#endif
