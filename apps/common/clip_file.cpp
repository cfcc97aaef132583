#include "common/clip_file.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "common/phase_clock.h"
#include "core/error.h"
#include "media/png_sequence_writer.h"
#include "media/wav_writer.h"
#include "media/y4m_wav_writer.h"
#ifdef LTX2_WITH_MEDIA
#include "media/ffmpeg/mp4_writer.h"
#endif

namespace ltx2::cli {

void check_output_available(const std::string& path) {
#ifndef LTX2_WITH_MEDIA
  LTX2_CHECK(media::clip_format(path) != media::ClipFormat::Mp4,
             "--output-path {}: MP4 output is not available in this build (built without FFmpeg); write "
             "a .y4m (+ .wav), a .wav or a PNG sequence (frames/%05d.png) instead, or install the FFmpeg "
             "development packages and rebuild",
             path);
#else
  (void)path;
#endif
}

// Chunks wait here for the encoder thread; at most kMaxQueued, so a slow encoder holds the decoder
// back instead of piling up frames. The first encoder error stops the thread and is rethrown to
// the caller.
struct ClipFile::Encoder {
  static constexpr size_t kMaxQueued = 4;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Tensor> queue;
  bool busy = false, closing = false;
  std::exception_ptr error;
  std::thread thread;

  explicit Encoder(media::ClipWriter& writer) : thread([this, &writer] { loop(writer); }) {}
  ~Encoder() {
    {
      std::lock_guard lock(mutex);
      closing = true;
    }
    changed.notify_all();
    thread.join();
  }

  void loop(media::ClipWriter& writer) {
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return closing || !queue.empty(); });
      if (closing) return;  // finish() drains first; otherwise this is an abort
      Tensor frames = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      std::exception_ptr failed;
      try {
        writer.write_video(frames);
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      busy = false;
      if (failed) {
        error = failed;
        queue.clear();
        changed.notify_all();
        return;
      }
      changed.notify_all();
    }
  }

  void rethrow_error() {
    if (error) std::rethrow_exception(error);
  }
};

ClipFile::ClipFile(std::string path, double fps, int64_t audio_sample_rate, bool with_audio)
    : path_(std::move(path)),
      format_(media::clip_format(path_)),
      fps_(fps),
      audio_sample_rate_(audio_sample_rate),
      with_audio_(with_audio) {
  check_output_available(path_);
  LTX2_CHECK(with_audio || format_ != media::ClipFormat::Wav, "{}: a .wav output without audio", path_);
  for (const std::string& out : media::clip_outputs(path_, with_audio_)) {
    std::vector<std::string> names = {out};
    if (format_ == media::ClipFormat::PngSequence) names.push_back(media::previous_sequence_name(out));
    locks_.push_back(std::make_unique<media::OutputLock>(out, names));
  }
  if (format_ == media::ClipFormat::Wav)
    writer_ = std::make_unique<media::WavWriter>(path_, static_cast<int>(audio_sample_rate_));
}

// The encoder thread stops before the writer goes (which removes an unfinished output).
ClipFile::~ClipFile() {
  encoder_.reset();
}

void ClipFile::drain() {
  if (!encoder_) return;
  std::unique_lock lock(encoder_->mutex);
  encoder_->changed.wait(lock,
                         [&] { return encoder_->error || (encoder_->queue.empty() && !encoder_->busy); });
  encoder_->rethrow_error();
}

void ClipFile::open_video_writer() {
  const int rate = with_audio_ ? static_cast<int>(audio_sample_rate_) : 0;  // 0: no audio track
  switch (format_) {
    case media::ClipFormat::Y4m:
      writer_ = std::make_unique<media::Y4mWavWriter>(path_, media::Y4mOptions{width_, height_, fps_, rate});
      break;
    case media::ClipFormat::PngSequence:
      writer_ =
          std::make_unique<media::PngSequenceWriter>(path_, media::PngSequenceOptions{width_, height_, rate});
      break;
    case media::ClipFormat::Mp4: {
#ifdef LTX2_WITH_MEDIA
      media::Mp4Options o;
      o.width = width_;
      o.height = height_;
      o.fps = fps_;
      o.audio_sample_rate = rate;
      writer_ = std::make_unique<media::Mp4Writer>(path_, o);
#endif
      break;
    }
    case media::ClipFormat::Wav: break;
  }
  encoder_ = std::make_unique<Encoder>(*writer_);
}

void ClipFile::add_frames(const Tensor& frames) {
  const auto start = PhaseClock::Clock::now();
  LTX2_CHECK(format_ != media::ClipFormat::Wav, "{}: a .wav output holds no video, got frames {}", path_,
             frames.str());
  LTX2_CHECK(
      frames.dim() == 4 && frames.size(3) == 3 && frames.dtype() == DType::U8 && frames.device().is_cpu(),
      "{}: decoded frames must be uint8 [n, H, W, 3] on the CPU, got {}", path_, frames.str());
  if (!writer_) {
    height_ = static_cast<int>(frames.size(1));
    width_ = static_cast<int>(frames.size(2));
    open_video_writer();
  }
  {
    std::unique_lock lock(encoder_->mutex);
    encoder_->changed.wait(lock,
                           [&] { return encoder_->error || encoder_->queue.size() < Encoder::kMaxQueued; });
    encoder_->rethrow_error();
    encoder_->queue.push_back(frames);
  }
  encoder_->changed.notify_all();
  frames_ += frames.size(0);
  encode_seconds_ += seconds_since(start);
}

void ClipFile::add_audio(const Tensor& waveform, int64_t sample_rate) {
  const auto start = PhaseClock::Clock::now();
  LTX2_CHECK(with_audio_, "{}: audio for an output without audio (--no-audio)", path_);
  LTX2_CHECK(writer_, "{}: audio arrived before any video frame", path_);
  drain();
  LTX2_CHECK(sample_rate == audio_sample_rate_,
             "{}: the vocoder gave {} Hz audio, the stream was opened at {} Hz", path_, sample_rate,
             audio_sample_rate_);
  writer_->write_audio(waveform);
  audio_added_ = true;
  encode_seconds_ += seconds_since(start);
}

void ClipFile::finish() {
  const auto start = PhaseClock::Clock::now();
  LTX2_CHECK(writer_, "{}: the run produced no frames", path_);
  drain();
  LTX2_CHECK(audio_added_ || !with_audio_, "{}: the run produced no audio", path_);
  encoder_.reset();
  writer_->finish();
  encode_seconds_ += seconds_since(start);
}

}  // namespace ltx2::cli
