// PNG images for image conditioning, read with libpng.
//
// Result: float32 [H, W, 3], RGB, holding the 8-bit sample values 0..255 exactly (the reference's
// preprocessing maps those to [-1, 1] by x / 127.5 - 1). Grey is expanded to RGB, palettes are
// expanded, 16-bit samples are reduced to 8 bits, and an alpha channel is dropped without
// compositing (as PIL's convert("RGB") does).
#pragma once
#include <string>

#include "core/tensor.h"

namespace ltx2::media {

// Throws ltx2::Error naming the file when it is missing, not a readable PNG, or larger than 8192
// pixels a side (checked from the header, before anything is allocated).
Tensor read_png(const std::string& path);

struct ImageSize {
  int64_t width = 0, height = 0;
};
// The header only, with read_png's checks on it (signature, header, size cap): what a request can
// be validated with before any work, leaving the one decode to the run.
ImageSize read_png_size(const std::string& path);

}  // namespace ltx2::media
