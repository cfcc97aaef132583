// Per-sample perturbations (STG and the isolated-modality pass): which samples of a batch skip
// which attentions in which blocks. Stored as the reference's keep mask [4, num_blocks, B]
// (1 = keep, 0 = perturbed), on the CPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ltx2::models::transformer {

enum class PerturbationType : int {
  SkipVideoSelfAttn = 0,
  SkipAudioSelfAttn = 1,
  SkipA2VCrossAttn = 2,
  SkipV2ACrossAttn = 3,
};
inline constexpr int kPerturbationTypes = 4;

struct Perturbation {
  PerturbationType type;
  std::optional<std::vector<int64_t>> blocks;  // nullopt: every block
};

class BatchedPerturbations {
 public:
  // Nothing perturbed.
  BatchedPerturbations() = default;
  // One list per sample (an empty list: that sample is not perturbed).
  BatchedPerturbations(const std::vector<std::vector<Perturbation>>& per_sample, int64_t num_blocks);

  bool empty() const { return !keep_.defined(); }
  int64_t batch() const { return keep_.defined() ? keep_.size(2) : 0; }
  // Whether every / any sample of the batch is perturbed by `type` in `block`.
  bool all(PerturbationType type, int64_t block) const;
  bool any(PerturbationType type, int64_t block) const;
  // Keep values [B] (float 0/1) of `type` in `block`.
  Tensor keep(PerturbationType type, int64_t block) const;
  // The whole keep mask [4, num_blocks, B].
  const Tensor& mask() const { return keep_; }
  // Samples [first, first + count) of the batch (nothing perturbed stays nothing perturbed).
  BatchedPerturbations samples(int64_t first, int64_t count) const;

 private:
  Tensor keep_;
};

// "SKIP_VIDEO_SELF_ATTN" etc. (the reference's enum names); throws naming an unknown one.
PerturbationType perturbation_type_from_name(const std::string& name);

}  // namespace ltx2::models::transformer
