// One-frame H.264 round trip of a conditioning image (see h264_image.h).
#include "media/ffmpeg/h264_image.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "media/ffmpeg/av_handles.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

namespace ltx2::media {

namespace {

struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};

FramePtr alloc_frame(int width, int height, AVPixelFormat format) {
  FramePtr f(av_frame_alloc());
  LTX2_CHECK(f != nullptr, "h264 image: out of memory");
  f->width = width;
  f->height = height;
  f->format = format;
  const int rc = av_frame_get_buffer(f.get(), 0);
  LTX2_CHECK(rc >= 0, "h264 image: frame buffer: {}", av_message(rc));
  return f;
}

void convert(const AVFrame& src, AVFrame& dst) {
  std::unique_ptr<SwsContext, SwsDeleter> sws(
      sws_getContext(src.width, src.height, static_cast<AVPixelFormat>(src.format), dst.width, dst.height,
                     static_cast<AVPixelFormat>(dst.format), SWS_BILINEAR, nullptr, nullptr, nullptr));
  LTX2_CHECK(sws != nullptr, "h264 image: no swscale conversion");
  sws_scale(sws.get(), src.data, src.linesize, 0, src.height, dst.data, dst.linesize);
}

std::vector<PacketPtr> encode(const AVFrame& yuv, int crf) {
  const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
  LTX2_CHECK(codec != nullptr, "h264 image: FFmpeg has no libx264 encoder");
  CodecPtr ctx(avcodec_alloc_context3(codec));
  ctx->width = yuv.width;
  ctx->height = yuv.height;
  ctx->pix_fmt = AV_PIX_FMT_YUV420P;
  ctx->time_base = {1, 1};
  ctx->framerate = {1, 1};
  ctx->thread_count = 1;
  av_opt_set(ctx->priv_data, "preset", "veryfast", 0);
  av_opt_set(ctx->priv_data, "crf", std::to_string(crf).c_str(), 0);
  int rc = avcodec_open2(ctx.get(), codec, nullptr);
  LTX2_CHECK(rc >= 0, "h264 image: opening libx264: {}", av_message(rc));
  std::vector<PacketPtr> packets;
  auto drain = [&] {
    for (;;) {
      PacketPtr p(av_packet_alloc());
      rc = avcodec_receive_packet(ctx.get(), p.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      LTX2_CHECK(rc >= 0, "h264 image: encoding: {}", av_message(rc));
      packets.push_back(std::move(p));
    }
  };
  FramePtr frame(av_frame_clone(&yuv));
  frame->pts = 0;
  rc = avcodec_send_frame(ctx.get(), frame.get());
  LTX2_CHECK(rc >= 0, "h264 image: encoding: {}", av_message(rc));
  drain();
  avcodec_send_frame(ctx.get(), nullptr);
  drain();
  LTX2_CHECK(!packets.empty(), "h264 image: libx264 produced no packet");
  return packets;
}

FramePtr decode(const std::vector<PacketPtr>& packets) {
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_H264);
  LTX2_CHECK(codec != nullptr, "h264 image: FFmpeg has no H.264 decoder");
  CodecPtr ctx(avcodec_alloc_context3(codec));
  ctx->thread_count = 1;
  int rc = avcodec_open2(ctx.get(), codec, nullptr);
  LTX2_CHECK(rc >= 0, "h264 image: opening the H.264 decoder: {}", av_message(rc));
  FramePtr frame(av_frame_alloc());
  for (const PacketPtr& p : packets) {
    rc = avcodec_send_packet(ctx.get(), p.get());
    LTX2_CHECK(rc >= 0, "h264 image: decoding: {}", av_message(rc));
  }
  avcodec_send_packet(ctx.get(), nullptr);
  rc = avcodec_receive_frame(ctx.get(), frame.get());
  LTX2_CHECK(rc >= 0, "h264 image: decoding gave no frame: {}", av_message(rc));
  return frame;
}

}  // namespace

Tensor h264_recompress_image(const Tensor& image_hwc, int crf) {
  LTX2_CHECK(crf > 0, "h264 image: crf must be positive, got {}", crf);
  LTX2_CHECK(image_hwc.dim() == 3 && image_hwc.size(2) == 3, "h264 image: image must be [H, W, 3], got {}",
             image_hwc.str());
  const Tensor img = image_hwc.to(DType::F32).contiguous();
  const int width = static_cast<int>(img.size(1) / 2 * 2), height = static_cast<int>(img.size(0) / 2 * 2);
  LTX2_CHECK(width > 0 && height > 0, "h264 image: image {} is too small", image_hwc.str());
  const float* src = img.data<float>();
  FramePtr rgb = alloc_frame(width, height, AV_PIX_FMT_RGB24);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width * 3; ++x) {
      const float v = src[static_cast<int64_t>(y) * img.size(1) * 3 + x];
      rgb->data[0][y * rgb->linesize[0] + x] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
    }
  FramePtr yuv = alloc_frame(width, height, AV_PIX_FMT_YUV420P);
  convert(*rgb, *yuv);
  const FramePtr decoded = decode(encode(*yuv, crf));
  FramePtr back = alloc_frame(decoded->width, decoded->height, AV_PIX_FMT_RGB24);
  convert(*decoded, *back);
  Tensor out = Tensor::empty({back->height, back->width, 3});
  float* dst = out.data<float>();
  for (int y = 0; y < back->height; ++y)
    for (int x = 0; x < back->width * 3; ++x)
      dst[static_cast<int64_t>(y) * back->width * 3 + x] = back->data[0][y * back->linesize[0] + x];
  return out;
}

}  // namespace ltx2::media
