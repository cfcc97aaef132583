#include "common/video_file.h"

#include "common/phase_clock.h"
#include "core/error.h"
#ifdef LTX2_WITH_MEDIA
#include "media/ffmpeg/mp4_writer.h"
#endif

namespace ltx2::cli {

#ifdef LTX2_WITH_MEDIA

void check_mp4_output_available() {}

VideoFile::VideoFile(std::string path, double fps, int64_t audio_sample_rate)
    : path_(std::move(path)), fps_(fps), audio_sample_rate_(audio_sample_rate) {}

VideoFile::~VideoFile() = default;

void VideoFile::add_frames(const Tensor& frames) {
  const auto start = PhaseClock::Clock::now();
  LTX2_CHECK(frames.dim() == 4 && frames.size(3) == 3, "{}: decoded frames must be [n, H, W, 3]", path_);
  if (!writer_) {
    height_ = static_cast<int>(frames.size(1));
    width_ = static_cast<int>(frames.size(2));
    media::Mp4Options o;
    o.width = width_;
    o.height = height_;
    o.fps = fps_;
    o.audio_sample_rate = static_cast<int>(audio_sample_rate_);
    writer_ = std::make_shared<media::Mp4Writer>(path_, o);
  }
  writer_->write_video(frames);
  frames_ += frames.size(0);
  encode_seconds_ += seconds_since(start);
}

void VideoFile::add_audio(const Tensor& waveform, int64_t sample_rate) {
  const auto start = PhaseClock::Clock::now();
  LTX2_CHECK(writer_, "{}: audio arrived before any video frame", path_);
  LTX2_CHECK(sample_rate == audio_sample_rate_,
             "{}: the vocoder gave {} Hz audio, the stream was opened at {} Hz", path_, sample_rate,
             audio_sample_rate_);
  writer_->write_audio(waveform);
  encode_seconds_ += seconds_since(start);
}

void VideoFile::finish() {
  const auto start = PhaseClock::Clock::now();
  LTX2_CHECK(writer_, "{}: the run produced no frames", path_);
  writer_->finish();
  encode_seconds_ += seconds_since(start);
}

#else

void check_mp4_output_available() {
  LTX2_FAIL(
      "MP4 output is not available in this build (built without FFmpeg); install the FFmpeg "
      "development packages and rebuild");
}

VideoFile::VideoFile(std::string path, double fps, int64_t audio_sample_rate)
    : path_(std::move(path)), fps_(fps), audio_sample_rate_(audio_sample_rate) {
  check_mp4_output_available();
}
VideoFile::~VideoFile() = default;
void VideoFile::add_frames(const Tensor&) {
  check_mp4_output_available();
}
void VideoFile::add_audio(const Tensor&, int64_t) {
  check_mp4_output_available();
}
void VideoFile::finish() {
  check_mp4_output_available();
}

#endif

}  // namespace ltx2::cli
