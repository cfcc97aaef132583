// ClipWriter: where the generation programs put a clip (video frames in chunks, then the audio),
// whatever the file format. Implementations write to temporary files and put them in place only in
// finish(); a writer destroyed before finish() (an error, an interrupt) leaves no file behind.
//
// The format follows the output path's form: a file name holding a frame-number pattern is a PNG
// sequence (png_sequence_writer.h); otherwise the extension decides: .mp4 (ffmpeg/mp4_writer.h),
// .y4m (the audio as a .wav beside it, y4m_wav_writer.h) or .wav (the audio only, wav_writer.h).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace ltx2::media {

class ClipWriter {
 public:
  virtual ~ClipWriter() = default;
  // Appends frames [f, H, W, 3] (uint8 RGB, CPU).
  virtual void write_video(const Tensor& frames) = 0;
  // Appends audio [2, N] (float32 in [-1, 1], CPU).
  virtual void write_audio(const Tensor& audio) = 0;
  // Completes the file(s) and moves them into place.
  virtual void finish() = 0;
};

enum class ClipFormat { Mp4, Y4m, Wav, PngSequence };

// Throws ltx2::Error saying why (without the path: the caller names it and its flag) when the path
// has none of the forms above.
ClipFormat clip_format(const std::string& path);
// What a clip at `path` puts in place (with_audio: whether it has an audio track): the file, a
// .y4m's .wav, a sequence's folder. One writer each at a time: each is locked while written, and
// two jobs of one batch may not share one.
std::vector<std::string> clip_outputs(const std::string& path, bool with_audio);

}  // namespace ltx2::media
