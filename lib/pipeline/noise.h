// Gaussian noise that does not depend on how the work is split: a counter-based generator
// (Philox4x32-10) keyed by the seed, with the counter formed from a tensor id and the element
// index. Element e of tensor t is a function of (seed, t, e) only, so any rank or backend that
// generates a slice of a tensor gets exactly the values of the full draw there.
//
// Layout of one draw: the counter (e / 4, tensor id) gives four 32-bit words; words (0, 1) and
// (2, 3) each give two normals by the Box-Muller transform (computed in double, then rounded to
// float32, so that other backends reproduce the same floats), for elements 4(e/4) + 0..3.
#pragma once
#include <array>
#include <cstdint>

#include "core/tensor.h"

namespace ltx2::pipeline {

// One Philox4x32-10 block (Salmon et al. 2011), matching the Random123 known answers.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

class NoiseGenerator {
 public:
  explicit NoiseGenerator(uint64_t seed) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  // Standard normals for elements [first, first + count) of tensor `tensor_id` into out.
  void fill(uint64_t tensor_id, int64_t first, int64_t count, float* out) const;
  // The whole tensor `tensor_id` of `shape` (row-major element order), float32.
  Tensor normal(uint64_t tensor_id, const Shape& shape) const;
  // Elements [first, first + count) of tensor `tensor_id`, as [count].
  Tensor normal_range(uint64_t tensor_id, int64_t first, int64_t count) const;

 private:
  uint64_t seed_;
};

// The reference's GaussianNoiser on a latent: latent = lerp(latent, noise, noise_scale), then
// lerp(clean, latent, denoise_mask), so tokens with mask 0 keep their clean value.
Tensor noise_latent(const Tensor& latent, const Tensor& clean_latent, const Tensor& denoise_mask,
                    const Tensor& noise, float noise_scale);

}  // namespace ltx2::pipeline
