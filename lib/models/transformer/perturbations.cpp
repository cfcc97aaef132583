// The keep mask of BatchedPerturbations (reference: ltx_core/guidance/perturbations.py).
#include "models/transformer/perturbations.h"

#include <string>

#include "core/error.h"

namespace ltx2::models::transformer {

BatchedPerturbations::BatchedPerturbations(const std::vector<std::vector<Perturbation>>& per_sample,
                                           int64_t num_blocks) {
  const int64_t B = static_cast<int64_t>(per_sample.size());
  keep_ = Tensor::full({kPerturbationTypes, num_blocks, B}, 1.0f);
  float* k = keep_.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (const Perturbation& p : per_sample[b]) {
      const int64_t t = static_cast<int64_t>(p.type);
      if (!p.blocks) {
        for (int64_t i = 0; i < num_blocks; ++i) k[(t * num_blocks + i) * B + b] = 0.0f;
        continue;
      }
      for (int64_t i : *p.blocks) {
        LTX2_CHECK(i >= 0 && i < num_blocks, "perturbation of sample {} names block {}, the model has {}", b,
                   i, num_blocks);
        k[(t * num_blocks + i) * B + b] = 0.0f;
      }
    }
}

BatchedPerturbations BatchedPerturbations::samples(int64_t first, int64_t count) const {
  if (empty()) return {};
  LTX2_CHECK(first >= 0 && count >= 1 && first + count <= batch(),
             "perturbations: samples [{}, {}) of a batch of {}", first, first + count, batch());
  BatchedPerturbations out;
  out.keep_ = keep_.narrow(2, first, count).contiguous();
  return out;
}

bool BatchedPerturbations::all(PerturbationType type, int64_t block) const {
  if (empty()) return false;
  for (float v : keep(type, block).to_vector())
    if (v != 0.0f) return false;
  return true;
}

bool BatchedPerturbations::any(PerturbationType type, int64_t block) const {
  if (empty()) return false;
  for (float v : keep(type, block).to_vector())
    if (v == 0.0f) return true;
  return false;
}

Tensor BatchedPerturbations::keep(PerturbationType type, int64_t block) const {
  LTX2_CHECK(!empty(), "perturbations: no keep mask");
  LTX2_CHECK(block >= 0 && block < keep_.size(1), "perturbations: block {} out of range ({} blocks)", block,
             keep_.size(1));
  return keep_.select(0, static_cast<int64_t>(type)).select(0, block);
}

PerturbationType perturbation_type_from_name(const std::string& name) {
  if (name == "SKIP_VIDEO_SELF_ATTN") return PerturbationType::SkipVideoSelfAttn;
  if (name == "SKIP_AUDIO_SELF_ATTN") return PerturbationType::SkipAudioSelfAttn;
  if (name == "SKIP_A2V_CROSS_ATTN") return PerturbationType::SkipA2VCrossAttn;
  if (name == "SKIP_V2A_CROSS_ATTN") return PerturbationType::SkipV2ACrossAttn;
  LTX2_FAIL("unknown perturbation type '{}'", name);
}

}  // namespace ltx2::models::transformer
