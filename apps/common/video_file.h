// The generation programs' output: an MP4 (FFmpeg), or by the path's extension a .y4m video with a
// .wav beside it (media/y4m_wav_writer.h, no FFmpeg needed). Opened when the first decoded frames
// arrive (their size sets the stream's); every chunk goes to an encoder thread through a short
// queue, so encoding runs while the next chunk decodes (the queue keeps the chunk itself, no copy);
// the audio is added at the end and finish()
// renames the file(s) into place. Destroyed before finish() (an error, an interrupt), it leaves no
// file behind. From construction to destruction it holds the path's lock (media/output_file.h):
// another program writing the same path fails as its job starts, and temporaries that a killed
// run left there are removed. A build without FFmpeg (LTX2_WITH_MEDIA undefined) writes only .y4m:
// check_output_available() says so before any work.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "media/clip_writer.h"
#include "media/output_file.h"

namespace ltx2::cli {

// Throws ltx2::Error when this build cannot write `path` (an .mp4 without FFmpeg).
void check_output_available(const std::string& path);

class VideoFile {
 public:
  // audio_sample_rate: the vocoder's output rate (the stream is opened before the audio arrives).
  VideoFile(std::string path, double fps, int64_t audio_sample_rate);
  ~VideoFile();
  VideoFile(const VideoFile&) = delete;
  VideoFile& operator=(const VideoFile&) = delete;

  // Frames [n, H, W, 3] uint8 RGB on the CPU. The encoder thread reads them after the call
  // returns: the caller must not write to them again (PipelineCallbacks::video_chunk hands out
  // fresh tensors).
  void add_frames(const Tensor& frames);
  // The stereo waveform [2, N] at `sample_rate` (must be the rate given to the constructor).
  void add_audio(const Tensor& waveform, int64_t sample_rate);
  void finish();

  int64_t frames() const { return frames_; }
  int width() const { return width_; }
  int height() const { return height_; }
  // Wall time the caller spent waiting for the encoder (opening, a full queue, draining, the audio,
  // finishing); encoding that overlapped decoding is not counted.
  double encode_seconds() const { return encode_seconds_; }

 private:
  std::string path_;
  double fps_;
  int64_t audio_sample_rate_;
  std::unique_ptr<media::OutputLock> lock_;  // outlives the writer, which removes an unfinished file
  std::unique_ptr<media::ClipWriter> writer_;
  int64_t frames_ = 0;
  int width_ = 0, height_ = 0;
  double encode_seconds_ = 0;
  struct Encoder;  // the thread and its queue
  std::unique_ptr<Encoder> encoder_;
  void drain();
};

}  // namespace ltx2::cli
