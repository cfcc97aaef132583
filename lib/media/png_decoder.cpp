// PNG decoding through libpng's classic API (so that 16-bit samples are reduced to their high byte
// and alpha is dropped, as PIL does, instead of the simplified API's gamma conversion and
// compositing), into 8-bit RGB with the iCCP profile and the eXIf orientation.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "media/image_decoders.h"

namespace ltx2::media {
namespace {

void on_png_error(png_structp png, png_const_charp message) {
  auto* out = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(out, 256, "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

// The eXIf chunk may come before or after the image data (PIL reads either).
void read_exif(png_structp png, png_infop info, StoredImage* out) {
  png_uint_32 size = 0;
  png_bytep exif = nullptr;
  if (png_get_eXIf_1(png, info, &size, &exif) != 0 && exif != nullptr)
    out->orientation = exif_orientation(exif, size);
}

// Decodes into 8-bit RGB (only the header when `out` is null: width and height are then the stored
// ones); returns false with `error` set on failure. What is decoded lives in the caller, and nothing
// here changes after setjmp, so libpng's longjmp skips no destructor.
bool decode(FILE* file, png_uint_32* width, png_uint_32* height, StoredImage* out,
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
                  png_get_image_width(png, info), png_get_image_height(png, info),
                  static_cast<unsigned>(kMaxImageSide), static_cast<unsigned>(kMaxImageSide));
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (out == nullptr) {
    *width = png_get_image_width(png, info);
    *height = png_get_image_height(png, info);
    png_destroy_read_struct(&png, &info, nullptr);
    return true;
  }
  png_charp icc_name = nullptr;
  int icc_compression = 0;
  png_bytep icc = nullptr;
  png_uint_32 icc_size = 0;
  if (png_get_iCCP(png, info, &icc_name, &icc_compression, &icc, &icc_size) != 0 && icc != nullptr)
    out->icc_profile.assign(reinterpret_cast<const char*>(icc), icc_size);
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
  out->rgb.resize(static_cast<size_t>(*width) * *height * 3);
  rows->resize(*height);
  for (png_uint_32 y = 0; y < *height; ++y)
    (*rows)[y] = out->rgb.data() + static_cast<size_t>(y) * *width * 3;
  png_read_image(png, rows->data());
  png_read_end(png, info);
  read_exif(png, info, out);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

ImageSize png_size(FILE* file, const std::string& path) {
  png_uint_32 width = 0, height = 0;
  char error[256] = "out of memory";
  LTX2_CHECK(decode(file, &width, &height, nullptr, nullptr, error), "{}: cannot decode the PNG: {}", path,
             error);
  return {static_cast<int64_t>(width), static_cast<int64_t>(height)};
}

StoredImage decode_png(FILE* file, const std::string& path) {
  png_uint_32 width = 0, height = 0;
  StoredImage out;
  std::vector<png_bytep> rows;
  char error[256] = "out of memory";
  LTX2_CHECK(decode(file, &width, &height, &out, &rows, error), "{}: cannot decode the PNG: {}", path, error);
  out.width = width;
  out.height = height;
  return out;
}

}  // namespace ltx2::media
