// MP4 writer over libavformat / libavcodec: RGB -> I420 (rgb_to_yuv.h), libx264 and AAC encoding,
// interleaved muxing into a temporary file renamed into place at the end. One I420 frame buffer is
// reused for every video frame while the encoder holds no reference to it (libx264 copies the
// picture in); its padding is zeroed whenever it is (re)allocated.
#include "media/ffmpeg/mp4_writer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "media/ffmpeg/rgb_to_yuv.h"
#include "media/output_file.h"

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
    log_warn("ffmpeg: {}", text);
  else if (level <= AV_LOG_WARNING)
    log_debug("ffmpeg: {}", text);
  else
    log_trace("ffmpeg: {}", text);
}

void route_ffmpeg_logs() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(forward_av_log); });
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int default_encoder_threads(int height) {
  return std::min(machine_cores(), std::max(1, (height + 15) / 16 / 2));
}

struct Mp4Writer::Impl {
  std::string path, tmp;
  Mp4Options opt;
  int rate = 0;
  AVFormatContext* fmt = nullptr;
  AVCodecContext* video = nullptr;
  AVCodecContext* audio = nullptr;
  AVStream* video_stream = nullptr;
  AVStream* audio_stream = nullptr;
  AVFrame* frame = nullptr;    // audio
  AVFrame* picture = nullptr;  // I420 video
  AVPacket* packet = nullptr;
  std::unique_ptr<RgbToYuv420> to_yuv;
  Mp4Timings timings;
  int64_t video_pts = 0, audio_pts = 0;
  std::vector<float> pending[2];  // audio samples (already int16-quantised) not yet in a frame
  bool finished = false;

  ~Impl() {
    if (fmt && fmt->pb) avio_closep(&fmt->pb);
    avformat_free_context(fmt);
    avcodec_free_context(&video);
    avcodec_free_context(&audio);
    av_frame_free(&frame);
    av_frame_free(&picture);
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

  // The I420 buffer the next video frame is converted into: the previous one when the encoder
  // released it, else a fresh one with its padding zeroed, so that no uninitialised byte can reach
  // the encoder (whose SIMD loads may read past the row width).
  void writable_picture() {
    if (picture->buf[0] && av_frame_is_writable(picture)) return;
    av_frame_unref(picture);
    picture->format = AV_PIX_FMT_YUV420P;
    picture->width = opt.width;
    picture->height = opt.height;
    check(av_frame_get_buffer(picture, 0), "video frame allocation");
    for (AVBufferRef* buf : picture->buf)
      if (buf) std::memset(buf->data, 0, buf->size);
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
  m.tmp = temporary_path(m.path);
  m.check(avformat_alloc_output_context2(&m.fmt, nullptr, "mp4", m.tmp.c_str()), "creating the MP4 muxer");
  m.fmt->flags |= AVFMT_FLAG_BITEXACT;
  m.packet = av_packet_alloc();
  m.frame = av_frame_alloc();
  m.picture = av_frame_alloc();
  LTX2_CHECK(m.packet && m.frame && m.picture, "{}: out of memory", m.path);
  LTX2_CHECK(options.encoder_threads >= 0 && options.convert_threads >= 0,
             "{}: negative thread counts ({} encoder, {} conversion)", m.path, options.encoder_threads,
             options.convert_threads);
  m.opt.encoder_threads =
      options.encoder_threads > 0 ? options.encoder_threads : default_encoder_threads(options.height);
  m.opt.convert_threads = options.convert_threads > 0 ? options.convert_threads : machine_cores();
  m.to_yuv = std::make_unique<RgbToYuv420>(options.width, options.height, m.opt.convert_threads);

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
    c->thread_count = m.opt.encoder_threads;
    c->thread_type = FF_THREAD_FRAME;
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
                 frames.size(3) == 3 && frames.dtype() == DType::U8 && frames.device().is_cpu(),
             "{}: video frames {} are not uint8 [f, {}, {}, 3] on the CPU", m.path, frames.str(),
             m.opt.height, m.opt.width);
  const Tensor rgb = frames.contiguous();
  const int64_t frame_bytes = int64_t{m.opt.height} * m.opt.width * 3;
  for (int64_t f = 0; f < frames.size(0); ++f) {
    const auto start = Clock::now();
    m.writable_picture();
    m.to_yuv->convert(rgb.data<uint8_t>() + f * frame_bytes, m.picture->data, m.picture->linesize);
    const auto converted = Clock::now();
    m.timings.convert_seconds += std::chrono::duration<double>(converted - start).count();
    m.picture->pts = m.video_pts++;
    m.encode(m.video, m.video_stream, m.picture);
    m.timings.encode_seconds += seconds_since(converted);
    ++m.timings.frames;
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
  const auto flush_start = Clock::now();
  m.encode(m.video, m.video_stream, nullptr);
  m.timings.encode_seconds += seconds_since(flush_start);
  if (m.audio) {
    if (!m.pending[0].empty()) m.audio_frame(static_cast<int>(m.pending[0].size()));
    m.encode(m.audio, m.audio_stream, nullptr);
  }
  m.check(av_write_trailer(m.fmt), "writing the MP4 trailer");
  m.check(avio_closep(&m.fmt->pb), "closing the file");
  rename_into_place(m.tmp, m.path);
  m.finished = true;
}

Mp4Timings Mp4Writer::timings() const {
  return impl_->timings;
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
