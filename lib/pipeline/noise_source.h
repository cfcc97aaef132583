// Where a pipeline run's Gaussian noise comes from. Draws are numbered (0: stage-1 video,
// 1: stage-1 audio, 2: stage-2 video, 3: stage-2 audio, 4: the decoder's noise when it is timestep
// conditioned, 16 + 2 * step + stream: the ancestral sampler's per-step draws, video then audio;
// 2^20 + 2^16 * stage + 4 * step + 2 * (0 midpoint, 1 step) + stream: the res_2s loop's SDE draws)
// and made in the pipelines' order, each a standard normal float32 tensor of the patchified state.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "pipeline/noise.h"

namespace ltx2::pipeline {

enum class NoiseDraw : uint64_t {
  Stage1Video = 0,
  Stage1Audio = 1,
  Stage2Video = 2,
  Stage2Audio = 3,
  Decoder = 4
};
// The ancestral loop's draw for `step` and stream (0 video, 1 audio).
inline NoiseDraw ancestral_draw(int step, int stream) {
  return static_cast<NoiseDraw>(16 + 2 * static_cast<uint64_t>(step) + static_cast<uint64_t>(stream));
}

// The res_2s loop's SDE draw of stage `stage` (0, 1), `step`, at its midpoint or at the step's end,
// for stream 0 (video) or 1 (audio).
inline NoiseDraw res2s_draw(int stage, int step, bool at_step_end, int stream) {
  return static_cast<NoiseDraw>((uint64_t{1} << 20) + (static_cast<uint64_t>(stage) << 16) +
                                4 * static_cast<uint64_t>(step) + (at_step_end ? 2 : 0) +
                                static_cast<uint64_t>(stream));
}

class LatentNoiseSource {
 public:
  virtual ~LatentNoiseSource() = default;
  virtual Tensor draw(NoiseDraw which, const Shape& shape) = 0;
};

// Philox keyed by (seed, draw index): every element depends only on the seed, the draw and its
// index, so a run split over any number of ranks sees the same noise.
class PhiloxNoiseSource : public LatentNoiseSource {
 public:
  explicit PhiloxNoiseSource(uint64_t seed) : generator_(seed) {}
  Tensor draw(NoiseDraw which, const Shape& shape) override;

 private:
  NoiseGenerator generator_;
};

// Replays given tensors in draw order (the golden fixtures' recorded draws); a draw whose shape
// differs from the next recorded tensor, or one past the end, is refused.
class RecordedNoiseSource : public LatentNoiseSource {
 public:
  explicit RecordedNoiseSource(std::vector<Tensor> draws) : draws_(std::move(draws)) {}
  Tensor draw(NoiseDraw which, const Shape& shape) override;
  size_t used() const { return next_; }

 private:
  std::vector<Tensor> draws_;
  size_t next_ = 0;
};

}  // namespace ltx2::pipeline
