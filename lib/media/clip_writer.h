// ClipWriter: where the generation programs put a clip (video frames in chunks, then the audio),
// whatever the file format. Implementations write to temporary files and put them in place only in
// finish(); a writer destroyed before finish() (an error, an interrupt) leaves no file behind.
#pragma once

#include "core/tensor.h"

namespace ltx2::media {

class ClipWriter {
 public:
  virtual ~ClipWriter() = default;
  // Appends frames [f, H, W, 3] (float32 RGB in [0, 1], CPU).
  virtual void write_video(const Tensor& frames) = 0;
  // Appends audio [2, N] (float32 in [-1, 1], CPU).
  virtual void write_audio(const Tensor& audio) = 0;
  // Completes the file(s) and moves them into place.
  virtual void finish() = 0;
};

}  // namespace ltx2::media
