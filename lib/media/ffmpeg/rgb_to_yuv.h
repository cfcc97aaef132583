// RGB -> YUV 4:2:0 for the MP4 writer, by libswscale: 8-bit RGB frames (rows of width * 3 bytes,
// packed) to planar 8-bit Y, U, V with the BT.709 matrix and limited range set explicitly
// (sws_setColorspaceDetails), chroma the mean of each 2x2 block (area filter over chroma taken at
// full horizontal resolution), accurate rounding and bit-exact C arithmetic, so that every CPU
// gives the same bytes. Frames are cut into slices converted by `threads` threads of swscale's
// own pool (libswscale 6.4+, FFmpeg 5.0+; the bytes do not depend on the count); an older
// libswscale converts on one thread.
//
// Against the reference's float conversion (ltx_core/color/yuv.py: the same matrix, avg-pooled
// chroma, Y * 219 + 16, C * 224 + 128, truncated) of the same 8-bit frames, every sample is within
// one code value: swscale rounds where the reference truncates (tests/unit/media).
#pragma once

#include <cstdint>

extern "C" {
struct SwsContext;
}

namespace ltx2::media {

class RgbToYuv420 {
 public:
  // width and height even; threads >= 1. Throws ltx2::Error when swscale refuses the setup.
  RgbToYuv420(int width, int height, int threads);
  ~RgbToYuv420();
  RgbToYuv420(const RgbToYuv420&) = delete;
  RgbToYuv420& operator=(const RgbToYuv420&) = delete;

  // One frame: rgb holds height rows of width * 3 bytes; planes[0..2] (Y: height rows, U and V:
  // height / 2 rows) with their line sizes in bytes receive the result.
  void convert(const uint8_t* rgb, uint8_t* const planes[3], const int linesizes[3]);

  int width() const { return width_; }
  int height() const { return height_; }

 private:
  int width_, height_;
  SwsContext* sws_ = nullptr;
};

}  // namespace ltx2::media
