// PNG reading through libpng's simplified API, into float RGB 0..255.
#include "media/image_reader.h"

#include <png.h>

#include <cstring>
#include <vector>

#include "core/error.h"

namespace ltx2::media {

Tensor read_png(const std::string& path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  LTX2_CHECK(png_image_begin_read_from_file(&image, path.c_str()) != 0, "{}: cannot read PNG: {}", path,
             image.message);
  // RGBA (not RGB): libpng would composite alpha onto a background; the reference drops it.
  image.format = PNG_FORMAT_RGBA;
  const int64_t h = image.height, w = image.width;
  std::vector<png_byte> pixels(PNG_IMAGE_SIZE(image));
  if (png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr) == 0) {
    const std::string message = image.message;
    png_image_free(&image);
    LTX2_FAIL("{}: cannot decode PNG: {}", path, message);
  }
  Tensor out = Tensor::empty({h, w, 3});
  float* o = out.data<float>();
  for (int64_t i = 0; i < h * w; ++i)
    for (int c = 0; c < 3; ++c) o[i * 3 + c] = static_cast<float>(pixels[i * 4 + c]);
  return out;
}

}  // namespace ltx2::media
