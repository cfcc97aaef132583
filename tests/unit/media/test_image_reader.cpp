// PNG reading (libpng, in every build): RGB(A) and grey files written with libpng come back as exact
// 0..255 RGB values; the size cap and the header-only probe.
#include <png.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "media/image_reader.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

void write_png(const std::string& path, int w, int h, uint32_t format, const std::vector<png_byte>& pixels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = w;
  image.height = h;
  image.format = format;
  REQUIRE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr) != 0);
}

}  // namespace

TEST_CASE("image reader: RGBA drops alpha, grey expands, values stay exact") {
  test::ScratchDir dir("png");
  const int w = 5, h = 3;
  std::vector<png_byte> rgba(w * h * 4);
  for (size_t i = 0; i < rgba.size(); ++i) rgba[i] = static_cast<png_byte>((i * 37 + 11) % 256);
  write_png(dir.file("rgba.png"), w, h, PNG_FORMAT_RGBA, rgba);
  const Tensor img = media::read_image(dir.file("rgba.png"));
  REQUIRE(img.shape() == Shape{h, w, 3});
  REQUIRE(img.dtype() == DType::F32);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) REQUIRE(img.item({y, x, c}) == float(rgba[(y * w + x) * 4 + c]));

  std::vector<png_byte> grey(w * h);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<png_byte>(i * 17);
  write_png(dir.file("grey.png"), w, h, PNG_FORMAT_GRAY, grey);
  const Tensor g = media::read_image(dir.file("grey.png"));
  REQUIRE(g.shape() == Shape{h, w, 3});
  for (int c = 0; c < 3; ++c) REQUIRE(g.item({2, 4, c}) == float(grey[14]));
}

TEST_CASE("image reader: 16-bit samples keep their high byte, whatever the gamma chunk says") {
  test::ScratchDir dir("png16");
  std::vector<png_uint_16> rgb16 = {0xABCD, 0x0102, 0xFFFF, 0x0000, 0x8000, 0x7FFF};
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = 2;
  image.height = 1;
  image.format = PNG_FORMAT_LINEAR_RGB;
  REQUIRE(png_image_write_to_file(&image, dir.file("deep.png").c_str(), 0, rgb16.data(), 0, nullptr) != 0);
  const Tensor img = media::read_image(dir.file("deep.png"));
  REQUIRE(img.shape() == Shape{1, 2, 3});
  REQUIRE(img.to_vector() == std::vector<float>{0xAB, 0x01, 0xFF, 0x00, 0x80, 0x7F});
}

TEST_CASE("image reader: a missing or broken file is an error naming it") {
  test::ScratchDir dir("png_bad");
  REQUIRE_THROWS_WITH(media::read_image(dir.file("none.png")), Contains("none.png"));
  test::write_bytes(dir.file("bad.png"), "not a png at all");
  REQUIRE_THROWS_WITH(media::read_image(dir.file("bad.png")), Contains("bad.png"));
}

TEST_CASE("image reader: a header declaring a huge image is refused before anything is allocated") {
  // A 57-byte PNG (signature, IHDR, an empty IDAT, IEND) that declares 1,000,000 x 1,000,000 RGB
  // pixels; decoding it used to try to allocate 3 TB.
  const auto crc32 = [](const std::string& bytes) {
    uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : bytes) {
      c ^= b;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
  };
  const auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  const std::string ihdr = "IHDR" + be32(1000000) + be32(1000000) + std::string("\x08\x02\x00\x00\x00", 5);
  const auto chunk = [&](const std::string& type_and_data) {
    return be32(static_cast<uint32_t>(type_and_data.size() - 4)) + type_and_data + be32(crc32(type_and_data));
  };
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + chunk(ihdr) + chunk("IDAT") + chunk("IEND");
  test::ScratchDir dir("png_bomb");
  test::write_bytes(dir.file("bomb.png"), png);
  REQUIRE_THROWS_WITH(media::read_image(dir.file("bomb.png")),
                      Contains("bomb.png") && Contains("1000000x1000000 pixels, more than the 8192x8192"));
  REQUIRE_THROWS_WITH(media::read_image_size(dir.file("bomb.png")),
                      Contains("bomb.png") && Contains("1000000x1000000 pixels, more than the 8192x8192"));

  // Within the cap, the size comes from the header alone: the same header over an empty image
  // stream gives its size, where decoding it fails.
  const std::string small_ihdr = "IHDR" + be32(4000) + be32(3000) + std::string("\x08\x02\x00\x00\x00", 5);
  test::write_bytes(dir.file("header_only.png"),
                    std::string("\x89PNG\r\n\x1a\n", 8) + chunk(small_ihdr) + chunk("IDAT") + chunk("IEND"));
  const media::ImageSize size = media::read_image_size(dir.file("header_only.png"));
  CHECK(size.width == 4000);
  CHECK(size.height == 3000);
  REQUIRE_THROWS_WITH(media::read_image(dir.file("header_only.png")), Contains("header_only.png"));
  test::write_bytes(dir.file("text.png"), "not a png at all");
  REQUIRE_THROWS_WITH(media::read_image_size(dir.file("text.png")),
                      Contains("text.png") && Contains("not a PNG"));
}
