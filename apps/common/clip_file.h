// The generation programs' output, in the format its path names (media/clip_writer.h): an MP4
// (FFmpeg), a .y4m with a .wav beside it, a .wav alone, or a PNG sequence with its audio.wav;
// without an audio track when asked (--no-audio). The video writer is opened when the first
// decoded frames arrive (their size sets the stream's); every chunk goes to an encoder thread
// through a short queue, so encoding runs while the next chunk decodes (the queue keeps the chunk
// itself, no copy); the audio is added at the end and finish() puts the output in place.
// Destroyed before finish() (an error, an interrupt), it leaves nothing behind. From construction
// to destruction it holds the lock of every path it puts in place (media/output_file.h: the file,
// a .y4m's .wav, a sequence's folder): another program writing one of them fails as its job starts,
// and temporaries that a killed run left there are removed. A build without FFmpeg
// (LTX2_WITH_MEDIA undefined) writes every format but MP4: check_output_available() says so
// before any work.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "media/clip_writer.h"
#include "media/output_file.h"

namespace ltx2::cli {

// Throws ltx2::Error naming --output-path when this build cannot write `path` (an .mp4 without
// FFmpeg). The path must have a known form (validate_request checks it first).
void check_output_available(const std::string& path);

class ClipFile {
 public:
  // audio_sample_rate: the vocoder's output rate (a stream is opened before the audio arrives);
  // with_audio false: no audio track (output_has_audio).
  ClipFile(std::string path, double fps, int64_t audio_sample_rate, bool with_audio);
  ~ClipFile();
  ClipFile(const ClipFile&) = delete;
  ClipFile& operator=(const ClipFile&) = delete;

  // Frames [n, H, W, 3] uint8 RGB on the CPU. The encoder thread reads them after the call
  // returns: the caller must not write to them again (PipelineCallbacks::video_chunk hands out
  // fresh tensors). Refused for a .wav.
  void add_frames(const Tensor& frames);
  // The stereo waveform [2, N] at `sample_rate` (must be the rate given to the constructor).
  // Refused without an audio track.
  void add_audio(const Tensor& waveform, int64_t sample_rate);
  // Throws when the run gave no frames (unless a .wav) or no audio (unless without audio).
  void finish();

  int64_t frames() const { return frames_; }
  int width() const { return width_; }
  int height() const { return height_; }
  // Wall time the caller spent waiting for the encoder (opening, a full queue, draining, the audio,
  // finishing); encoding that overlapped decoding is not counted.
  double encode_seconds() const { return encode_seconds_; }

 private:
  std::string path_;
  media::ClipFormat format_;
  double fps_;
  int64_t audio_sample_rate_;
  bool with_audio_, audio_added_ = false;
  // Outlive the writer, which removes an unfinished output.
  std::vector<std::unique_ptr<media::OutputLock>> locks_;
  std::unique_ptr<media::ClipWriter> writer_;
  int64_t frames_ = 0;
  int width_ = 0, height_ = 0;
  double encode_seconds_ = 0;
  struct Encoder;  // the thread and its queue
  std::unique_ptr<Encoder> encoder_;
  void open_video_writer();
  void drain();
};

}  // namespace ltx2::cli
