// MP4 writer over libavformat / libavcodec: RGB float -> I420 conversion, libx264 and AAC
// encoding, interleaved muxing into a temporary file renamed into place at the end.
#include "media/ffmpeg/mp4_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "core/log.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
}

namespace ltx2::media {
namespace {

std::string av_error(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

// FFmpeg's own messages go to our log: errors as warnings (the error itself is thrown with the
// FFmpeg error string), the encoders' statistics and banners at trace level only.
void forward_av_log(void* avcl, int level, const char* fmt, va_list args) {
  if (level > av_log_get_level()) return;
  thread_local int print_prefix = 1;
  char line[1024];
  av_log_format_line2(avcl, level, fmt, args, line, sizeof line, &print_prefix);
  std::string text = line;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return;
  if (level <= AV_LOG_ERROR)
    spdlog::warn("ffmpeg: {}", text);
  else if (level <= AV_LOG_WARNING)
    spdlog::debug("ffmpeg: {}", text);
  else
    spdlog::trace("ffmpeg: {}", text);
}

void route_ffmpeg_logs() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(forward_av_log); });
}

// Clamp to [0, 255] and truncate (NaN -> 0).
uint8_t to_u8(float v) {
  if (!(v > 0.0f)) return 0;
  return static_cast<uint8_t>(std::min(v, 255.0f));
}

}  // namespace

struct Mp4Writer::Impl {
  std::string path, tmp;
  Mp4Options opt;
  int rate = 0;
  AVFormatContext* fmt = nullptr;
  AVCodecContext* video = nullptr;
  AVCodecContext* audio = nullptr;
  AVStream* video_stream = nullptr;
  AVStream* audio_stream = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  int64_t video_pts = 0, audio_pts = 0;
  std::vector<float> pending[2];  // audio samples (already int16-quantised) not yet in a frame
  bool finished = false;

  ~Impl() {
    if (fmt && fmt->pb) avio_closep(&fmt->pb);
    avformat_free_context(fmt);
    avcodec_free_context(&video);
    avcodec_free_context(&audio);
    av_frame_free(&frame);
    av_packet_free(&packet);
    if (!finished && !tmp.empty()) std::remove(tmp.c_str());
  }

  void check(int rc, const char* what) const {
    LTX2_CHECK(rc >= 0, "{}: {} failed: {}", path, what, av_error(rc));
  }

  AVCodecContext* open_encoder(const char* name, AVStream** stream, const auto& configure) {
    const AVCodec* codec = avcodec_find_encoder_by_name(name);
    LTX2_CHECK(codec != nullptr, "{}: FFmpeg has no '{}' encoder", path, name);
    AVCodecContext* ctx = avcodec_alloc_context3(codec);
    LTX2_CHECK(ctx != nullptr, "{}: cannot allocate the {} encoder", path, name);
    configure(ctx);
    ctx->flags |= AV_CODEC_FLAG_BITEXACT;
    if (fmt->oformat->flags & AVFMT_GLOBALHEADER) ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    const int rc = avcodec_open2(ctx, codec, nullptr);
    if (rc < 0) avcodec_free_context(&ctx);
    check(rc, name);
    *stream = avformat_new_stream(fmt, nullptr);
    LTX2_CHECK(*stream != nullptr, "{}: cannot add a stream", path);
    check(avcodec_parameters_from_context((*stream)->codecpar, ctx), "stream parameters");
    (*stream)->time_base = ctx->time_base;
    return ctx;
  }

  // Sends one frame (nullptr: flush) and writes every packet that comes out.
  void encode(AVCodecContext* ctx, AVStream* stream, AVFrame* f) {
    check(avcodec_send_frame(ctx, f), "encoding");
    for (;;) {
      const int rc = avcodec_receive_packet(ctx, packet);
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      check(rc, "encoding");
      // A video packet lasts one frame; without this the muxer gives the last frame no duration.
      if (ctx == video && packet->duration == 0) packet->duration = 1;
      av_packet_rescale_ts(packet, ctx->time_base, stream->time_base);
      packet->stream_index = stream->index;
      check(av_interleaved_write_frame(fmt, packet), "writing a packet");
    }
  }

  void audio_frame(int samples) {
    av_frame_unref(frame);
    frame->format = AV_SAMPLE_FMT_FLTP;
    frame->nb_samples = samples;
    frame->sample_rate = audio->sample_rate;
    check(av_channel_layout_copy(&frame->ch_layout, &audio->ch_layout), "audio layout");
    check(av_frame_get_buffer(frame, 0), "audio frame allocation");
    for (int c = 0; c < 2; ++c) {
      std::copy_n(pending[c].begin(), samples, reinterpret_cast<float*>(frame->data[c]));
      pending[c].erase(pending[c].begin(), pending[c].begin() + samples);
    }
    frame->pts = audio_pts;
    audio_pts += samples;
    encode(audio, audio_stream, frame);
  }
};

Mp4Writer::Mp4Writer(std::string path, const Mp4Options& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = std::move(path);
  m.opt = options;
  m.rate = static_cast<int>(options.fps);
  LTX2_CHECK(m.rate >= 1, "{}: fps {} is below 1", m.path, options.fps);
  LTX2_CHECK(options.width > 0 && options.height > 0 && options.width % 2 == 0 && options.height % 2 == 0,
             "{}: video size {}x{} must be positive and even (yuv420p)", m.path, options.width,
             options.height);
  LTX2_CHECK(options.audio_sample_rate >= 0, "{}: bad audio sample rate {}", m.path,
             options.audio_sample_rate);
  route_ffmpeg_logs();
  m.tmp = m.path + ".tmp." + std::to_string(getpid());
  m.check(avformat_alloc_output_context2(&m.fmt, nullptr, "mp4", m.tmp.c_str()), "creating the MP4 muxer");
  m.fmt->flags |= AVFMT_FLAG_BITEXACT;
  m.packet = av_packet_alloc();
  m.frame = av_frame_alloc();
  LTX2_CHECK(m.packet && m.frame, "{}: out of memory", m.path);

  m.video = m.open_encoder("libx264", &m.video_stream, [&](AVCodecContext* c) {
    c->width = options.width;
    c->height = options.height;
    c->time_base = AVRational{1, m.rate};
    c->framerate = AVRational{m.rate, 1};
    c->pix_fmt = AV_PIX_FMT_YUV420P;
    c->colorspace = AVCOL_SPC_BT709;
    c->color_primaries = AVCOL_PRI_BT709;
    c->color_trc = AVCOL_TRC_BT709;
    c->color_range = AVCOL_RANGE_MPEG;
    c->thread_count = options.encoder_threads;
    av_opt_set(c->priv_data, "crf", std::to_string(options.crf).c_str(), 0);
    av_opt_set(c->priv_data, "preset", options.preset.c_str(), 0);
    // x264's AVX-512 code made tiny frames (96x64) encode differently from run to run within one
    // process; every asm level gives the same bits otherwise, so stop at AVX2 where it exists.
    if (__builtin_cpu_supports("avx2")) av_opt_set(c->priv_data, "x264-params", "asm=AVX2", 0);
  });
  if (options.audio_sample_rate > 0) {
    m.audio = m.open_encoder("aac", &m.audio_stream, [&](AVCodecContext* c) {
      c->sample_fmt = AV_SAMPLE_FMT_FLTP;
      c->sample_rate = options.audio_sample_rate;
      c->time_base = AVRational{1, options.audio_sample_rate};
      const AVChannelLayout stereo = AV_CHANNEL_LAYOUT_STEREO;
      av_channel_layout_copy(&c->ch_layout, &stereo);
    });
  }
  m.check(avio_open(&m.fmt->pb, m.tmp.c_str(), AVIO_FLAG_WRITE), "opening the file");
  m.check(avformat_write_header(m.fmt, nullptr), "writing the MP4 header");
}

Mp4Writer::~Mp4Writer() = default;

void Mp4Writer::write_video(const Tensor& frames) {
  Impl& m = *impl_;
  LTX2_CHECK(!m.finished, "{}: write after finish", m.path);
  LTX2_CHECK(frames.dim() == 4 && frames.size(1) == m.opt.height && frames.size(2) == m.opt.width &&
                 frames.size(3) == 3,
             "{}: video frames {} are not [f, {}, {}, 3]", m.path, frames.str(), m.opt.height, m.opt.width);
  const Tensor rgb = frames.to(DType::F32).contiguous();
  const int64_t h = m.opt.height, w = m.opt.width;
  for (int64_t f = 0; f < frames.size(0); ++f) {
    const float* px = rgb.data<float>() + f * h * w * 3;
    av_frame_unref(m.frame);
    m.frame->format = AV_PIX_FMT_YUV420P;
    m.frame->width = static_cast<int>(w);
    m.frame->height = static_cast<int>(h);
    m.check(av_frame_get_buffer(m.frame, 0), "video frame allocation");
    // Zero the whole buffer, padding included, so that no uninitialised byte can reach the
    // encoder (whose SIMD loads may read past the row width).
    for (AVBufferRef* buf : m.frame->buf)
      if (buf) std::memset(buf->data, 0, buf->size);
    // BT.709, computed per pixel; chroma averaged over each 2x2 block before the range mapping.
    std::vector<float> cb(h * w), cr(h * w);
    for (int64_t y = 0; y < h; ++y) {
      uint8_t* luma = m.frame->data[0] + y * m.frame->linesize[0];
      for (int64_t x = 0; x < w; ++x) {
        const float* p = px + (y * w + x) * 3;
        const float r = p[0], g = p[1], b = p[2];
        luma[x] = to_u8((0.2126f * r + 0.7152f * g + 0.0722f * b) * 219.0f + 16.0f);
        cb[y * w + x] = -0.1146f * r - 0.3854f * g + 0.5f * b;
        cr[y * w + x] = 0.5f * r - 0.4542f * g - 0.0458f * b;
      }
    }
    for (int64_t y = 0; y < h / 2; ++y) {
      uint8_t* u = m.frame->data[1] + y * m.frame->linesize[1];
      uint8_t* v = m.frame->data[2] + y * m.frame->linesize[2];
      for (int64_t x = 0; x < w / 2; ++x) {
        const int64_t i = 2 * y * w + 2 * x;
        const float mb = (cb[i] + cb[i + 1] + cb[i + w] + cb[i + w + 1]) / 4.0f;
        const float mr = (cr[i] + cr[i + 1] + cr[i + w] + cr[i + w + 1]) / 4.0f;
        u[x] = to_u8(mb * 224.0f + 128.0f);
        v[x] = to_u8(mr * 224.0f + 128.0f);
      }
    }
    m.frame->pts = m.video_pts++;
    m.encode(m.video, m.video_stream, m.frame);
  }
}

void Mp4Writer::write_audio(const Tensor& audio) {
  Impl& m = *impl_;
  LTX2_CHECK(!m.finished, "{}: write after finish", m.path);
  LTX2_CHECK(m.audio != nullptr, "{}: audio given but the writer has no audio stream", m.path);
  LTX2_CHECK(audio.dim() == 2 && audio.size(0) == 2, "{}: audio {} is not [2, N]", m.path, audio.str());
  const Tensor a = audio.to(DType::F32).contiguous();
  const int64_t n = a.size(1);
  for (int c = 0; c < 2; ++c) {
    const float* s = a.data<float>() + c * n;
    for (int64_t i = 0; i < n; ++i) {
      // int16 as the reference packs it (clip, scale by 32767, truncate), then the s16 -> float
      // conversion the resampler applies before the AAC encoder.
      const float v = std::isnan(s[i]) ? 0.0f : std::clamp(s[i], -1.0f, 1.0f);
      const auto q = static_cast<int16_t>(v * 32767.0f);
      m.pending[c].push_back(static_cast<float>(q) / 32768.0f);
    }
  }
  const auto frame_size = static_cast<size_t>(m.audio->frame_size);
  while (m.pending[0].size() >= frame_size) m.audio_frame(static_cast<int>(frame_size));
}

void Mp4Writer::finish() {
  Impl& m = *impl_;
  LTX2_CHECK(!m.finished, "{}: finished twice", m.path);
  LTX2_CHECK(m.video_pts > 0, "{}: no video frames were written", m.path);
  m.encode(m.video, m.video_stream, nullptr);
  if (m.audio) {
    if (!m.pending[0].empty()) m.audio_frame(static_cast<int>(m.pending[0].size()));
    m.encode(m.audio, m.audio_stream, nullptr);
  }
  m.check(av_write_trailer(m.fmt), "writing the MP4 trailer");
  m.check(avio_closep(&m.fmt->pb), "closing the file");
  LTX2_CHECK(std::rename(m.tmp.c_str(), m.path.c_str()) == 0, "{}: cannot rename {} into place", m.path,
             m.tmp);
  m.finished = true;
}

void write_mp4(const std::string& path, const Tensor& frames, double fps, const Tensor& audio,
               int audio_sample_rate) {
  LTX2_CHECK(frames.dim() == 4, "{}: video frames {} are not [F, H, W, 3]", path, frames.str());
  Mp4Options o;
  o.height = static_cast<int>(frames.size(1));
  o.width = static_cast<int>(frames.size(2));
  o.fps = fps;
  o.audio_sample_rate = audio.defined() ? audio_sample_rate : 0;
  Mp4Writer writer(path, o);
  writer.write_video(frames);
  if (audio.defined()) writer.write_audio(audio);
  writer.finish();
}

}  // namespace ltx2::media
