// JPEG and WebP decoding through libavcodec's mjpeg and webp decoders, into 8-bit RGB with the
// EXIF orientation (FFmpeg 5.1 reports it as the "Orientation" frame metadata entry for both; the
// JPEG decoder adds a display matrix too) and the ICC profile (frame side data).
//
// The YCbCr -> RGB step is done here rather than by libswscale: swscale's 4:2:0 chroma upsampling
// differs from libjpeg's and libwebp's (which PIL uses) by up to 60 levels at sharp colour edges,
// where the centred bilinear upsampling below, the same filter as their "fancy" upsampling, keeps
// within a few levels.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "media/ffmpeg/av_handles.h"
#include "media/image_decoders.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

namespace ltx2::media {
namespace {

std::string read_all(FILE* file, const std::string& path) {
  std::string bytes;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) bytes.append(buf, n);
  LTX2_CHECK(!std::ferror(file), "{}: cannot read the image", path);
  return bytes;
}

// Upsampled chroma at luma index i of a plane subsampled by 2^shift, as the two taps of the
// centred bilinear filter: a luma sample sits a quarter of a chroma sample before (even i) or after
// (odd i) the centre of its chroma sample, so it takes 3/4 of that one and 1/4 of its neighbour
// (the edge sample repeated at the borders).
struct ChromaTap {
  int near, far;
};

std::vector<ChromaTap> chroma_taps(int n, int shift, int chroma_n) {
  std::vector<ChromaTap> taps(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int c = i >> shift;
    const int other = shift == 0 ? c : (i & 1) == 0 ? std::max(c - 1, 0) : std::min(c + 1, chroma_n - 1);
    taps[i] = {c, other};
  }
  return taps;
}

// 8-bit planar YCbCr (4:2:0, 4:2:2, 4:4:0 or 4:4:4) to RGB with BT.601: full range for JPEG,
// limited range for WebP (VP8). The upsampled chroma is rounded to an integer first, as both
// libraries do.
void yuv_to_rgb(const AVFrame& f, const AVPixFmtDescriptor& d, bool full_range, StoredImage* out) {
  const int w = f.width, h = f.height, sx = d.log2_chroma_w, sy = d.log2_chroma_h;
  const int cw = AV_CEIL_RSHIFT(w, sx), ch = AV_CEIL_RSHIFT(h, sy);
  const std::vector<ChromaTap> tx = chroma_taps(w, sx, cw), ty = chroma_taps(h, sy, ch);
  const int wx = sx == 0 ? 4 : 3, wy = sy == 0 ? 4 : 3;  // weight of the near tap, in quarters
  const float luma_scale = full_range ? 1.0f : 255.0f / 219.0f, luma_offset = full_range ? 0.0f : 16.0f;
  const float chroma_scale = full_range ? 1.0f : 255.0f / 224.0f;
  const float kr = 0.299f, kb = 0.114f, kg = 1.0f - kr - kb;
  const float r_cr = 2 * (1 - kr), b_cb = 2 * (1 - kb), g_cb = -b_cb * kb / kg, g_cr = -r_cr * kr / kg;
  for (int y = 0; y < h; ++y) {
    const uint8_t* luma = f.data[0] + static_cast<ptrdiff_t>(y) * f.linesize[0];
    const ptrdiff_t near_row = static_cast<ptrdiff_t>(ty[y].near),
                    far_row = static_cast<ptrdiff_t>(ty[y].far);
    uint8_t* dst = out->rgb.data() + static_cast<size_t>(y) * w * 3;
    for (int x = 0; x < w; ++x) {
      float chroma[2];
      for (int p = 0; p < 2; ++p) {
        const uint8_t* plane = f.data[1 + p];
        const ptrdiff_t stride = f.linesize[1 + p];
        const auto at = [&](ptrdiff_t row, int col) { return static_cast<int>(plane[row * stride + col]); };
        const int horizontal_near = wx * at(near_row, tx[x].near) + (4 - wx) * at(near_row, tx[x].far);
        const int horizontal_far = wx * at(far_row, tx[x].near) + (4 - wx) * at(far_row, tx[x].far);
        const int sum = wy * horizontal_near + (4 - wy) * horizontal_far;  // 16 x the bilinear value
        chroma[p] = static_cast<float>((sum + 8) >> 4) - 128.0f;
      }
      const float cb = chroma[0] * chroma_scale, cr = chroma[1] * chroma_scale;
      const float yy = (static_cast<float>(luma[x]) - luma_offset) * luma_scale;
      const float rgb[3] = {yy + r_cr * cr, yy + g_cb * cb + g_cr * cr, yy + b_cb * cb};
      for (int c = 0; c < 3; ++c)
        dst[x * 3 + c] = static_cast<uint8_t>(std::clamp(std::lround(rgb[c]), 0L, 255L));
    }
  }
}

// RGB(A), planar GBR(A) and grey(+alpha) frames of any depth: the samples' high 8 bits, alpha
// dropped, grey repeated into R, G and B.
void components_to_rgb(const AVFrame& f, const AVPixFmtDescriptor& d, StoredImage* out) {
  const bool rgb = (d.flags & AV_PIX_FMT_FLAG_RGB) != 0;
  std::vector<uint16_t> line(static_cast<size_t>(f.width));
  for (int c = 0; c < 3; ++c) {
    const int component = rgb ? c : 0;
    const int shift = std::max(d.comp[component].depth - 8, 0);
    for (int y = 0; y < f.height; ++y) {
      av_read_image_line2(line.data(), const_cast<const uint8_t**>(f.data), f.linesize, &d, 0, y, component,
                          f.width, 0, 2);
      uint8_t* dst = out->rgb.data() + static_cast<size_t>(y) * f.width * 3 + c;
      for (int x = 0; x < f.width; ++x) dst[x * 3] = static_cast<uint8_t>(line[x] >> shift);
    }
  }
}

int orientation_of(const AVFrame& f) {
  const AVDictionaryEntry* e = av_dict_get(f.metadata, "Orientation", nullptr, 0);
  return e != nullptr ? std::atoi(e->value) : 1;
}

}  // namespace

StoredImage decode_with_ffmpeg(FILE* file, FfmpegImageCodec codec, const std::string& path) {
  const char* name = codec == FfmpegImageCodec::kJpeg ? "JPEG" : "WebP";
  const std::string bytes = read_all(file, path);
  // An image of at most 8192 x 8192 pixels takes far less; a packet's size is an int.
  LTX2_CHECK(bytes.size() <= (size_t{1} << 30), "{}: a {} file of more than 1 GiB", path, name);
  const AVCodec* decoder =
      avcodec_find_decoder(codec == FfmpegImageCodec::kJpeg ? AV_CODEC_ID_MJPEG : AV_CODEC_ID_WEBP);
  LTX2_CHECK(decoder != nullptr, "{}: this build's FFmpeg has no {} decoder", path, name);
  CodecPtr ctx(avcodec_alloc_context3(decoder));
  LTX2_CHECK(ctx != nullptr, "{}: out of memory", path);
  ctx->thread_count = 1;
  // The header was checked; this keeps the decoder itself from allocating past the cap.
  ctx->max_pixels = kMaxImageSide * kMaxImageSide;
  // A damaged file is an error, not a concealed picture; the decoder's own messages say it at
  // debug level only, the error thrown here says it in one line.
  ctx->err_recognition = AV_EF_CRCCHECK | AV_EF_BITSTREAM | AV_EF_BUFFER | AV_EF_EXPLODE;
  ctx->log_level_offset = AV_LOG_DEBUG - AV_LOG_ERROR;
  int rc = avcodec_open2(ctx.get(), decoder, nullptr);
  LTX2_CHECK(rc >= 0, "{}: opening FFmpeg's {} decoder: {}", path, name, av_message(rc));

  PacketPtr packet(av_packet_alloc());
  LTX2_CHECK(packet != nullptr && av_new_packet(packet.get(), static_cast<int>(bytes.size())) == 0,
             "{}: out of memory", path);
  std::copy(bytes.begin(), bytes.end(), packet->data);
  FramePtr frame(av_frame_alloc());
  LTX2_CHECK(frame != nullptr, "{}: out of memory", path);
  rc = avcodec_send_packet(ctx.get(), packet.get());
  if (rc >= 0) rc = avcodec_send_packet(ctx.get(), nullptr);
  if (rc >= 0) rc = avcodec_receive_frame(ctx.get(), frame.get());
  LTX2_CHECK(rc >= 0, "{}: cannot decode the {} ({}: corrupt or truncated?)", path, name, av_message(rc));
  LTX2_CHECK(frame->decode_error_flags == 0 && (frame->flags & AV_FRAME_FLAG_CORRUPT) == 0,
             "{}: cannot decode the {}: the image data is corrupt or truncated", path, name);

  StoredImage out;
  out.width = frame->width;
  out.height = frame->height;
  out.orientation = orientation_of(*frame);
  if (const AVFrameSideData* icc = av_frame_get_side_data(frame.get(), AV_FRAME_DATA_ICC_PROFILE))
    out.icc_profile.assign(reinterpret_cast<const char*>(icc->data), icc->size);
  out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
  const auto format = static_cast<AVPixelFormat>(frame->format);
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(format);
  LTX2_CHECK(d != nullptr, "{}: FFmpeg's {} decoder gave no pixel format", path, name);
  const bool planar_yuv = d->nb_components >= 3 &&
                          (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL)) == 0 &&
                          (d->flags & AV_PIX_FMT_FLAG_PLANAR) != 0 && d->comp[0].depth == 8 &&
                          d->log2_chroma_w <= 1 && d->log2_chroma_h <= 1;
  const bool components =
      (d->flags & (AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM | AV_PIX_FMT_FLAG_HWACCEL)) == 0 &&
      ((d->flags & AV_PIX_FMT_FLAG_RGB) != 0 || d->nb_components <= 2);
  if (planar_yuv)
    yuv_to_rgb(*frame, *d, codec == FfmpegImageCodec::kJpeg || frame->color_range == AVCOL_RANGE_JPEG, &out);
  else if (components)
    components_to_rgb(*frame, *d, &out);
  else
    LTX2_FAIL("{}: the {} decodes to pixel format {}, which is not read here (CMYK or 4:1:1?)", path, name,
              d->name);
  return out;
}

}  // namespace ltx2::media
