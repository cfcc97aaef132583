// MP4 output (FFmpeg): H.264 video (libx264, CRF 19, preset veryfast, yuv420p, BT.709 tags,
// limited range) and optional AAC stereo audio, as the reference's SDR encoder writes them.
//
// Video comes as float frames [f, H, W, 3] (RGB in [0, 1], any number of chunks); they are
// converted to I420 here the way the reference does it: BT.709 matrix, 2x2-averaged chroma,
// limited range (Y*219+16, C*224+128), clamped and truncated to uint8. Audio comes as float
// [2, N] in [-1, 1], clipped, scaled by 32767 and truncated to int16 before the AAC encoder.
// The file appears atomically: it is written to "<path>.tmp.<pid>" and renamed by finish();
// a writer destroyed before finish() (an error) removes the temporary file.
#pragma once
#include <memory>
#include <string>

#include "core/tensor.h"
#include "media/clip_writer.h"

namespace ltx2::media {

struct Mp4Options {
  int width = 0, height = 0;  // even
  double fps = 24;            // the stream rate is int(fps), as the reference truncates it
  int crf = 19;
  std::string preset = "veryfast";
  int audio_sample_rate = 0;  // 0: no audio stream
  // Encoder threads. 1 (the default) makes the bytes independent of the machine; x264's output
  // depends on its thread count.
  int encoder_threads = 1;
};

class Mp4Writer final : public ClipWriter {
 public:
  // Opens "<path>.tmp.<pid>" and writes the header. Throws ltx2::Error naming the path.
  Mp4Writer(std::string path, const Mp4Options& options);
  ~Mp4Writer() override;
  Mp4Writer(const Mp4Writer&) = delete;
  Mp4Writer& operator=(const Mp4Writer&) = delete;

  // Appends frames [f, H, W, 3] (float32, CPU).
  void write_video(const Tensor& frames) override;
  // Appends audio [2, N] (float32, CPU); needs options.audio_sample_rate > 0.
  void write_audio(const Tensor& audio) override;
  // Flushes the encoders, writes the trailer and renames the file into place.
  void finish() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One call: frames [F, H, W, 3] at fps, and audio [2, N] at sample_rate (audio may be undefined).
void write_mp4(const std::string& path, const Tensor& frames, double fps, const Tensor& audio = {},
               int audio_sample_rate = 0);

}  // namespace ltx2::media
