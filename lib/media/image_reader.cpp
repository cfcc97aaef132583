// The image reader (see image_reader.h): the format from the first bytes, the size from the header
// (libpng for PNG; the JPEG frame header and the WebP bitstream header read here, so that the cap
// is checked before FFmpeg allocates anything), the decode by the format's decoder, then the
// reference's orientation and the ICC check, the same for every format.
#include "media/image_reader.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "media/image_decoders.h"

namespace ltx2::media {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

enum class Format { kPng, kJpeg, kWebp, kExr, kOther };

File open_image(const std::string& path) {
  File file(std::fopen(path.c_str(), "rb"));
  LTX2_CHECK(file != nullptr, "{}: cannot open the image", path);
  return file;
}

// By the signature, whatever the file's name says.
Format sniff(FILE* file) {
  unsigned char head[12] = {};
  const size_t n = std::fread(head, 1, sizeof head, file);
  std::rewind(file);
  if (n >= 8 && std::memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0) return Format::kPng;
  if (n >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) return Format::kJpeg;
  if (n >= 12 && std::memcmp(head, "RIFF", 4) == 0 && std::memcmp(head + 8, "WEBP", 4) == 0)
    return Format::kWebp;
  if (n >= 4 && std::memcmp(head, "\x76\x2f\x31\x01", 4) == 0) return Format::kExr;
  return Format::kOther;
}

// The formats this build cannot read are refused here, for the header probe and the decode alike.
void check_readable(Format format, const std::string& path) {
  LTX2_CHECK(format != Format::kExr,
             "{}: an OpenEXR image, which the reference takes only through its HDR path (--hdr), which this "
             "engine does not have; convert it to PNG",
             path);
  LTX2_CHECK(format != Format::kOther, "{}: not a PNG, JPEG or WebP image (judged by its first bytes)", path);
#if !LTX2_WITH_MEDIA
  LTX2_CHECK(format == Format::kPng,
             "{}: a {} image, which this build cannot read: it lacks FFmpeg (it reads PNG only)", path,
             format == Format::kJpeg ? "JPEG" : "WebP");
#endif
}

void check_size(const ImageSize& size, const std::string& path) {
  LTX2_CHECK(size.width > 0 && size.height > 0, "{}: the header declares an empty {}x{} image", path,
             size.width, size.height);
  LTX2_CHECK(size.width <= kMaxImageSide && size.height <= kMaxImageSide,
             "{}: {}x{} pixels, more than the {}x{} an image may have", path, size.width, size.height,
             kMaxImageSide, kMaxImageSide);
}

int read_u8(FILE* file, const std::string& path) {
  const int c = std::fgetc(file);
  LTX2_CHECK(c != EOF, "{}: truncated JPEG header", path);
  return c;
}

int read_be16(FILE* file, const std::string& path) {
  const int hi = read_u8(file, path);
  return hi << 8 | read_u8(file, path);
}

// The first frame header (SOF0..SOF15 less DHT, JPG and DAC), walking the marker segments by their
// lengths: the size is there, whatever metadata comes before it.
ImageSize jpeg_size(FILE* file, const std::string& path) {
  LTX2_CHECK(std::fseek(file, 2, SEEK_SET) == 0, "{}: truncated JPEG header", path);
  for (;;) {
    LTX2_CHECK(read_u8(file, path) == 0xFF,
               "{}: corrupt JPEG header (a segment does not start with a marker)", path);
    int marker = read_u8(file, path);
    while (marker == 0xFF) marker = read_u8(file, path);                 // fill bytes
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length
    LTX2_CHECK(marker != 0xD9 && marker != 0xDA,
               "{}: corrupt JPEG header (no frame header before the image data)", path);
    const int length = read_be16(file, path);
    LTX2_CHECK(length >= 2, "{}: corrupt JPEG header (a segment of length {})", path, length);
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      read_u8(file, path);  // sample precision
      const int height = read_be16(file, path);
      return {read_be16(file, path), height};
    }
    LTX2_CHECK(std::fseek(file, length - 2, SEEK_CUR) == 0, "{}: truncated JPEG header", path);
  }
}

uint32_t le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// The first chunk after "RIFF....WEBP": the extended header's canvas, or the lossy (VP8) or
// lossless (VP8L) bitstream's own header.
ImageSize webp_size(FILE* file, const std::string& path) {
  unsigned char h[30] = {};
  LTX2_CHECK(std::fread(h, 1, sizeof h, file) == sizeof h, "{}: truncated WebP header", path);
  if (std::memcmp(h + 12, "VP8X", 4) == 0) {
    LTX2_CHECK((h[20] & 0x02) == 0, "{}: an animated WebP; a conditioning image must be a still one", path);
    return {le(h + 24, 3) + 1, le(h + 27, 3) + 1};
  }
  if (std::memcmp(h + 12, "VP8 ", 4) == 0) {
    LTX2_CHECK(h[23] == 0x9D && h[24] == 0x01 && h[25] == 0x2A, "{}: corrupt WebP header (no VP8 start code)",
               path);
    return {le(h + 26, 2) & 0x3FFF, le(h + 28, 2) & 0x3FFF};
  }
  if (std::memcmp(h + 12, "VP8L", 4) == 0) {
    LTX2_CHECK(h[20] == 0x2F, "{}: corrupt WebP header (no VP8L signature)", path);
    const uint32_t bits = le(h + 21, 4);
    return {(bits & 0x3FFF) + 1, (bits >> 14 & 0x3FFF) + 1};
  }
  LTX2_FAIL("{}: corrupt WebP header (no VP8, VP8L or VP8X chunk first)", path);
}

ImageSize header_size(FILE* file, Format format, const std::string& path) {
  check_readable(format, path);
  ImageSize size;
  switch (format) {
    case Format::kPng: size = png_size(file, path); break;
    case Format::kJpeg: size = jpeg_size(file, path); break;
    default: size = webp_size(file, path); break;
  }
  check_size(size, path);
  std::rewind(file);
  return size;
}

// The description ('desc' tag) of an ICC profile: ASCII in a version 2 profile, the first
// UTF-16BE record of a version 4 one; empty when the profile is too malformed to say.
std::string icc_description(const std::string& icc) {
  const auto* p = reinterpret_cast<const unsigned char*>(icc.data());
  const size_t n = icc.size();
  const auto be = [&](size_t at) -> uint32_t {
    return at + 4 <= n
               ? uint32_t{p[at]} << 24 | uint32_t{p[at + 1]} << 16 | uint32_t{p[at + 2]} << 8 | p[at + 3]
               : 0;
  };
  const uint32_t tags = be(128);
  for (uint32_t i = 0; i < tags && 132 + 12 * (size_t{i} + 1) <= n; ++i) {
    const size_t entry = 132 + 12 * size_t{i};
    if (std::memcmp(p + entry, "desc", 4) != 0) continue;
    const size_t at = be(entry + 4);
    if (at + 12 > n) return {};
    std::string text;
    if (std::memcmp(p + at, "desc", 4) == 0) {
      const size_t count = std::min<size_t>(be(at + 8), n - (at + 12));
      text.assign(icc, at + 12, count);
    } else if (std::memcmp(p + at, "mluc", 4) == 0 && be(at + 8) > 0 && at + 28 <= n) {
      const size_t length = be(at + 20), start = at + be(at + 24);
      for (size_t k = start; k + 1 < std::min(start + length, n); k += 2) {
        const unsigned c = p[k] << 8 | p[k + 1];
        text.push_back(c < 0x80 ? static_cast<char>(c) : '?');
      }
    }
    text.erase(std::find(text.begin(), text.end(), '\0'), text.end());
    return text;
  }
  return {};
}

// The reference converts an embedded profile to sRGB; with no colour management here, a profile
// that is not sRGB's leaves the colours as stored, said once per file.
void check_icc_profile(const std::string& icc, const std::string& path) {
  std::string description = icc_description(icc);
  std::string lower = description;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("srgb") != std::string::npos) return;
  static std::mutex mutex;
  static std::set<std::string> warned;
  const std::lock_guard lock(mutex);
  if (!warned.insert(path).second) return;
  log_warn(
      "{}: its ICC colour profile ({}) is not sRGB; the pixel values are used as they are (this build "
      "converts no colour profiles; the reference converts to sRGB)",
      path, description.empty() ? "unnamed" : "'" + description + "'");
}

// The reference's turns (PIL's rotate by 180, 270 and 90 degrees anticlockwise for the orientations
// 3, 6 and 8), on the stored RGB, into the float result.
Tensor oriented(const StoredImage& img) {
  const int64_t H = img.height, W = img.width;
  const int o = img.orientation;
  const bool quarter = o == 6 || o == 8;
  const int64_t h = quarter ? W : H, w = quarter ? H : W;
  Tensor out = Tensor::empty({h, w, 3});
  float* dst = out.data<float>();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      int64_t sy = y, sx = x;
      if (o == 3) {
        sy = H - 1 - y;
        sx = W - 1 - x;
      } else if (o == 6) {
        sy = H - 1 - x;
        sx = y;
      } else if (o == 8) {
        sy = x;
        sx = W - 1 - y;
      }
      const uint8_t* s = img.rgb.data() + (sy * W + sx) * 3;
      for (int c = 0; c < 3; ++c) dst[(y * w + x) * 3 + c] = s[c];
    }
  return out;
}

}  // namespace

int exif_orientation(const uint8_t* tiff, size_t size) {
  if (size < 8) return 1;
  const bool little = std::memcmp(tiff, "II*\0", 4) == 0;
  if (!little && std::memcmp(tiff, "MM\0*", 4) != 0) return 1;
  const auto read = [&](size_t at, int bytes) -> uint32_t {
    uint32_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint32_t{tiff[at + i]} << (8 * (little ? i : bytes - 1 - i));
    return v;
  };
  const size_t ifd = read(4, 4);
  if (ifd + 2 > size) return 1;
  const uint32_t entries = read(ifd, 2);
  for (uint32_t i = 0; i < entries && ifd + 2 + 12 * (size_t{i} + 1) <= size; ++i) {
    const size_t entry = ifd + 2 + 12 * size_t{i};
    if (read(entry, 2) == 0x0112) return static_cast<int>(read(entry + 8, 2));  // a SHORT, first in its field
  }
  return 1;
}

ImageSize read_image_size(const std::string& path) {
  const File file = open_image(path);
  return header_size(file.get(), sniff(file.get()), path);
}

Tensor read_image(const std::string& path) {
  const File file = open_image(path);
  const Format format = sniff(file.get());
  header_size(file.get(), format, path);  // in a build without FFmpeg, refuses all but PNG
  StoredImage img;
#if LTX2_WITH_MEDIA
  if (format != Format::kPng) {
    img = decode_with_ffmpeg(
        file.get(), format == Format::kJpeg ? FfmpegImageCodec::kJpeg : FfmpegImageCodec::kWebp, path);
    check_size({img.width, img.height}, path);
  }
#endif
  if (format == Format::kPng) img = decode_png(file.get(), path);
  if (!img.icc_profile.empty()) check_icc_profile(img.icc_profile, path);
  return oriented(img);
}

}  // namespace ltx2::media
