// PNG reading through libpng's classic API (so that 16-bit samples are reduced
// to their high byte and alpha is dropped, as PIL does, instead of the simplified API's gamma
// conversion and compositing), into float RGB 0..255.
#include "media/image_reader.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/error.h"

namespace ltx2::media {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* out = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(out, 256, "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

// Conditioning images are resized to the video's size (at most a few thousand pixels a side).
constexpr png_uint_32 kMaxImageSide = 8192;

// Decodes into 8-bit RGB (only the header when rgb is null: width and height are then the stored
// ones); returns false with `error` set on failure. The buffers live in the caller, and nothing
// here changes after setjmp, so libpng's longjmp skips no destructor.
bool decode(FILE* file, png_uint_32* width, png_uint_32* height, std::vector<png_byte>* rgb,
            std::vector<png_bytep>* rows, char* error) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, error, on_png_error, on_png_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_init_io(png, file);
  png_read_info(png, info);
  // A few bytes of header can declare any size: refuse before anything is allocated.
  if (png_get_image_width(png, info) > kMaxImageSide || png_get_image_height(png, info) > kMaxImageSide) {
    std::snprintf(error, 256, "%ux%u pixels, more than the %ux%u an image may have",
                  png_get_image_width(png, info), png_get_image_height(png, info), kMaxImageSide,
                  kMaxImageSide);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (rgb == nullptr) {
    *width = png_get_image_width(png, info);
    *height = png_get_image_height(png, info);
    png_destroy_read_struct(&png, &info, nullptr);
    return true;
  }
  const int color = png_get_color_type(png, info);
  png_set_strip_16(png);
  png_set_packing(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  png_set_strip_alpha(png);
  png_read_update_info(png, info);
  *width = png_get_image_width(png, info);
  *height = png_get_image_height(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(*width) * 3) {
    std::snprintf(error, 256, "unexpected row layout after conversion to RGB");
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  rgb->resize(static_cast<size_t>(*width) * *height * 3);
  rows->resize(*height);
  for (png_uint_32 y = 0; y < *height; ++y) (*rows)[y] = rgb->data() + static_cast<size_t>(y) * *width * 3;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

namespace {

std::unique_ptr<FILE, FileCloser> open_png(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  LTX2_CHECK(file != nullptr, "{}: cannot open the image", path);
  png_byte signature[8] = {};
  LTX2_CHECK(std::fread(signature, 1, 8, file.get()) == 8 && png_sig_cmp(signature, 0, 8) == 0,
             "{}: not a PNG file", path);
  std::rewind(file.get());
  return file;
}

}  // namespace

ImageSize read_png_size(const std::string& path) {
  const auto file = open_png(path);
  png_uint_32 width = 0, height = 0;
  char error[256] = "out of memory";
  LTX2_CHECK(decode(file.get(), &width, &height, nullptr, nullptr, error), "{}: cannot decode PNG: {}", path,
             error);
  return {static_cast<int64_t>(width), static_cast<int64_t>(height)};
}

Tensor read_png(const std::string& path) {
  const auto file = open_png(path);
  png_uint_32 width = 0, height = 0;
  std::vector<png_byte> rgb;
  std::vector<png_bytep> rows;
  char error[256] = "out of memory";
  LTX2_CHECK(decode(file.get(), &width, &height, &rgb, &rows, error), "{}: cannot decode PNG: {}", path,
             error);
  Tensor out = Tensor::empty({static_cast<int64_t>(height), static_cast<int64_t>(width), 3});
  float* o = out.data<float>();
  for (size_t i = 0; i < rgb.size(); ++i) o[i] = static_cast<float>(rgb[i]);
  return out;
}

}  // namespace ltx2::media
