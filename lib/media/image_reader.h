// Conditioning images: PNG (libpng), JPEG and WebP (FFmpeg's decoders, in a build with FFmpeg),
// recognised by their first bytes, not their names.
//
// Result: float32 [H, W, 3], RGB, holding the 8-bit sample values 0..255 exactly (the reference's
// preprocessing maps those to [-1, 1] by x / 127.5 - 1), as the reference's decode_image (PIL) gives
// them:
// - grey is expanded to RGB, palettes are expanded, 16-bit PNG samples keep their high byte, and an
//   alpha channel is dropped without compositing (PIL's convert("RGB"));
// - JPEG and lossy WebP chroma is upsampled bilinearly about its centred sample positions and
//   converted with BT.601 (full range for JPEG, limited range for WebP), as libjpeg's and libwebp's
//   default ("fancy") upsampling do; with FFmpeg's IDCT in place of libjpeg's, the RGB values differ
//   from PIL's by at most a few levels (tests/unit/media/test_image_formats.cpp measures it);
// - the EXIF orientation (JPEG APP1, WebP EXIF chunk, PNG eXIf chunk) is applied as the reference
//   applies it: 3 turns the image by 180 degrees, 6 a quarter turn clockwise, 8 a quarter turn
//   anticlockwise; the mirrored orientations (2, 4, 5, 7) are left as stored, as the reference
//   leaves them;
// - an embedded ICC profile is not converted (the reference converts it to sRGB with LittleCMS; no
//   colour-management library is among this project's dependencies): a profile whose description
//   does not name sRGB gets one warning naming the file, and the stored values are used as they are.
// OpenEXR files are refused: the reference reads EXR only through its HDR path (--hdr), which this
// engine does not have. Anything else is refused naming the formats accepted. A build without FFmpeg
// reads PNG only and refuses JPEG and WebP saying so.
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace ltx2::media {

// Throws ltx2::Error starting with the file's path when it is missing, not an image of an accepted
// format, corrupt or truncated, or larger than 8192 pixels a side (checked from the header, before
// anything is allocated).
Tensor read_image(const std::string& path);

struct ImageSize {
  int64_t width = 0, height = 0;
};
// The header only, with read_image's checks on it (format, header, size cap): what a request can be
// validated with before any work, leaving the one decode to the run. The size is the stored one,
// before the EXIF orientation turns it.
ImageSize read_image_size(const std::string& path);

}  // namespace ltx2::media
