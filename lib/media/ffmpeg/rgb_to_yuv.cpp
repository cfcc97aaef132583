// RGB -> YUV 4:2:0 through libswscale (see rgb_to_yuv.h). Slice threads need libswscale 6.4
// (FFmpeg 5.0: the "threads" option and sws_scale_frame); older ones convert on one thread.
#include "media/ffmpeg/rgb_to_yuv.h"

#include <string>

#include "core/error.h"
#include "media/ffmpeg/av_handles.h"

extern "C" {
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#define LTX2_SWS_THREADS (LIBSWSCALE_VERSION_INT >= AV_VERSION_INT(6, 4, 100))

namespace ltx2::media {

namespace {

#if LTX2_SWS_THREADS
// The frames only lend their memory to swscale for one call (sws_scale_frame needs reference
// counted frames; a frame without buffers would be copied first).
void no_free(void*, uint8_t*) {}

struct FrameView {
  AVFrame* f = av_frame_alloc();
  ~FrameView() { av_frame_free(&f); }
  FrameView(const FrameView&) = delete;
  FrameView& operator=(const FrameView&) = delete;
  FrameView(AVPixelFormat format, int width, int height) {
    LTX2_CHECK(f != nullptr, "rgb to yuv: out of memory");
    f->format = format;
    f->width = width;
    f->height = height;
  }
  void plane(int i, const uint8_t* data, int linesize, int rows) {
    uint8_t* p = const_cast<uint8_t*>(data);  // swscale only reads the source frame
    f->data[i] = p;
    f->linesize[i] = linesize;
    f->buf[i] = av_buffer_create(p, static_cast<size_t>(linesize) * rows, no_free, nullptr, 0);
    LTX2_CHECK(f->buf[i] != nullptr, "rgb to yuv: out of memory");
  }
};
#endif

}  // namespace

RgbToYuv420::RgbToYuv420(int width, int height, int threads) : width_(width), height_(height) {
  LTX2_CHECK(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0,
             "rgb to yuv: frame size {}x{} must be positive and even (4:2:0)", width, height);
  LTX2_CHECK(threads >= 1, "rgb to yuv: {} threads", threads);
  sws_ = sws_alloc_context();
  LTX2_CHECK(sws_ != nullptr, "rgb to yuv: out of memory");
  const int flags = SWS_AREA | SWS_FULL_CHR_H_INP | SWS_ACCURATE_RND | SWS_BITEXACT;
  bool options_set =
      av_opt_set_int(sws_, "srcw", width, 0) >= 0 && av_opt_set_int(sws_, "srch", height, 0) >= 0 &&
      av_opt_set_int(sws_, "src_format", AV_PIX_FMT_RGB24, 0) >= 0 &&
      av_opt_set_int(sws_, "dstw", width, 0) >= 0 && av_opt_set_int(sws_, "dsth", height, 0) >= 0 &&
      av_opt_set_int(sws_, "dst_format", AV_PIX_FMT_YUV420P, 0) >= 0 &&
      av_opt_set_int(sws_, "sws_flags", flags, 0) >= 0;
#if LTX2_SWS_THREADS
  options_set = options_set && av_opt_set_int(sws_, "threads", threads, 0) >= 0;
#endif
  int rc = options_set ? sws_init_context(sws_, nullptr, nullptr) : -1;
  // Full-range RGB in, BT.709 limited-range YUV out (brightness 0, contrast and saturation 1.0
  // in 16.16 fixed point).
  if (rc >= 0)
    rc = sws_setColorspaceDetails(sws_, sws_getCoefficients(SWS_CS_ITU709), 1,
                                  sws_getCoefficients(SWS_CS_ITU709), 0, 0, 1 << 16, 1 << 16);
  if (rc < 0) sws_freeContext(sws_);
  LTX2_CHECK(rc >= 0, "rgb to yuv: libswscale refuses rgb24 -> yuv420p BT.709 at {}x{} on {} threads", width,
             height, threads);
}

RgbToYuv420::~RgbToYuv420() {
  sws_freeContext(sws_);
}

void RgbToYuv420::convert(const uint8_t* rgb, uint8_t* const planes[3], const int linesizes[3]) {
#if LTX2_SWS_THREADS
  FrameView src(AV_PIX_FMT_RGB24, width_, height_);
  src.plane(0, rgb, width_ * 3, height_);
  FrameView dst(AV_PIX_FMT_YUV420P, width_, height_);
  for (int i = 0; i < 3; ++i) dst.plane(i, planes[i], linesizes[i], i == 0 ? height_ : height_ / 2);
  // Threaded, sws_scale_frame returns 0; on one thread the number of lines written.
  const int rc = sws_scale_frame(sws_, dst.f, src.f);
#else
  const int stride = width_ * 3;
  const int rc = sws_scale(sws_, &rgb, &stride, 0, height_, planes, linesizes);
#endif
  LTX2_CHECK(rc >= 0, "rgb to yuv: libswscale failed on a {}x{} frame: {}", width_, height_, av_message(rc));
}

}  // namespace ltx2::media
