// The format decoders behind media/image_reader.h (internal to lib/media): each gives the stored
// 8-bit RGB with the EXIF orientation and the ICC profile found in the file, which the reader
// applies and checks the same way for every format.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "media/image_reader.h"

namespace ltx2::media {

// Conditioning images are resized to the video's size (at most a few thousand pixels a side).
constexpr int64_t kMaxImageSide = 8192;

struct StoredImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height x width x 3, as stored (before the orientation)
  int orientation = 1;       // the EXIF Orientation tag; 1 (as stored) when there is none
  std::string icc_profile;   // the embedded ICC profile's bytes; empty when there is none
};

// PNG through libpng (media/png_decoder.cpp), from the start of an open file. Errors name the path.
ImageSize png_size(FILE* file, const std::string& path);
StoredImage decode_png(FILE* file, const std::string& path);

// The Orientation tag (0x0112) of the first IFD of an EXIF block in TIFF layout ("II*\0" or
// "MM\0*" first), 1 when the block has none or is malformed (PIL then finds none either).
int exif_orientation(const uint8_t* tiff, size_t size);

#if LTX2_WITH_MEDIA
enum class FfmpegImageCodec { kJpeg, kWebp };
// A whole JPEG or WebP file, from the start of an open file, through FFmpeg's decoder
// (media/ffmpeg/image_decoder.cpp). Errors name the path.
StoredImage decode_with_ffmpeg(FILE* file, FfmpegImageCodec codec, const std::string& path);
#endif

}  // namespace ltx2::media
