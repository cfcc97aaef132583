// MP4 output (FFmpeg): H.264 video (libx264, CRF 19, preset veryfast, yuv420p, BT.709 tags,
// limited range) and optional AAC stereo audio, as the reference's SDR encoder writes them.
//
// Video comes as 8-bit RGB frames [f, H, W, 3] (uint8, any number of chunks); rgb_to_yuv.h
// converts them to I420 (libswscale: BT.709 matrix, 2x2-mean chroma, limited range), on as many
// threads as the machine has cores, before libx264 encodes them with frame threads, one per core
// up to one per two macroblock rows (the reference asks for thread_count 0, x264's automatic 1.5
// per core under the same cap, thread_type FRAME; here the count is stated). Audio
// comes as float [2, N] in [-1, 1], clipped, scaled by 32767 and truncated to int16 before the AAC
// encoder.
//
// What the bytes depend on: the frames, the audio, the options, and the encoder thread count.
// x264 is deterministic for given settings and thread count (only its non-deterministic option,
// not set here, trades that away), but a different count gives a different, equally valid stream. So
// the same input gives the same file on one machine (the count follows its cores unless set), and
// on machines of another core count only if encoder_threads is set to the same value. The colour
// conversion's bytes depend on nothing but the frames. x264 is capped at AVX2 (see the .cpp).
//
// The file appears atomically: it is written to "<path>.tmp.<pid>", flushed to disk and renamed by
// finish() (media/output_file.h); a writer destroyed before finish() (an error) removes the
// temporary file.
#pragma once
#include <memory>
#include <string>

#include "core/cpu.h"
#include "core/tensor.h"
#include "media/clip_writer.h"

namespace ltx2::media {

// libx264 frame threads for frames of this height: the cores, capped as x264's automatic count is
// at one thread per two macroblock rows (more threads only wait on each other's rows).
int default_encoder_threads(int height);

struct Mp4Options {
  int width = 0, height = 0;  // even
  double fps = 24;            // the stream rate is int(fps), as the reference truncates it
  int crf = 19;
  std::string preset = "veryfast";
  int audio_sample_rate = 0;  // 0: no audio stream
  // libx264 frame threads (0: default_encoder_threads(height)) and RGB -> YUV slice threads (0:
  // machine_cores()). The encoder's count is part of what the bytes depend on (see above); the
  // conversion's is not.
  int encoder_threads = 0;
  int convert_threads = 0;
};

// Wall time the writer spent in the colour conversion and in the encoders' calls (libx264's frame
// threads encode in the background, so the encoder share is what the caller waited for).
struct Mp4Timings {
  int64_t frames = 0;
  double convert_seconds = 0, encode_seconds = 0;
};

class Mp4Writer final : public ClipWriter {
 public:
  // Opens "<path>.tmp.<pid>" and writes the header. Throws ltx2::Error naming the path.
  Mp4Writer(std::string path, const Mp4Options& options);
  ~Mp4Writer() override;
  Mp4Writer(const Mp4Writer&) = delete;
  Mp4Writer& operator=(const Mp4Writer&) = delete;

  // Appends frames [f, H, W, 3] (uint8 RGB, CPU).
  void write_video(const Tensor& frames) override;
  // Appends audio [2, N] (float32, CPU); needs options.audio_sample_rate > 0.
  void write_audio(const Tensor& audio) override;
  // Flushes the encoders, writes the trailer and renames the file into place.
  void finish() override;

  Mp4Timings timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One call: frames [F, H, W, 3] (uint8 RGB) at fps, and audio [2, N] at sample_rate (audio may be
// undefined); the other options at their defaults.
void write_mp4(const std::string& path, const Tensor& frames, double fps, const Tensor& audio = {},
               int audio_sample_rate = 0);

}  // namespace ltx2::media
