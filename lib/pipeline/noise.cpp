// Philox4x32-10 and the Box-Muller normals built on it; the latent noiser.
#include "pipeline/noise.h"

#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::pipeline {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// A uniform in (0, 1), never 0 or 1.
inline double open_unit(uint32_t u) {
  return (static_cast<double>(u) + 0.5) * 0x1p-32;
}

inline void box_muller(uint32_t a, uint32_t b, float* n0, float* n1) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double r = std::sqrt(-2.0 * std::log(open_unit(a)));
  const double theta = kTwoPi * open_unit(b);
  *n0 = static_cast<float>(r * std::cos(theta));
  *n1 = static_cast<float>(r * std::sin(theta));
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], &hi0, &lo0);
    mulhilo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

void NoiseGenerator::fill(uint64_t tensor_id, int64_t first, int64_t count, float* out) const {
  LTX2_CHECK(first >= 0 && count >= 0, "noise: bad element range [{}, +{})", first, count);
  if (count == 0) return;
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)};
  const auto id_lo = static_cast<uint32_t>(tensor_id), id_hi = static_cast<uint32_t>(tensor_id >> 32);
  const int64_t first_block = first / 4, last_block = (first + count - 1) / 4;
#pragma omp parallel for schedule(static) if (last_block - first_block > 4096)
  for (int64_t block = first_block; block <= last_block; ++block) {
    const auto b = static_cast<uint64_t>(block);
    const auto w =
        philox4x32_10({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), id_lo, id_hi}, key);
    float n[4];
    box_muller(w[0], w[1], &n[0], &n[1]);
    box_muller(w[2], w[3], &n[2], &n[3]);
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t e = block * 4 + lane;
      if (e >= first && e < first + count) out[e - first] = n[lane];
    }
  }
}

Tensor NoiseGenerator::normal(uint64_t tensor_id, const Shape& shape) const {
  Tensor t = Tensor::empty(shape);
  fill(tensor_id, 0, t.numel(), t.data<float>());
  return t;
}

Tensor NoiseGenerator::normal_range(uint64_t tensor_id, int64_t first, int64_t count) const {
  Tensor t = Tensor::empty({count});
  fill(tensor_id, first, count, t.data<float>());
  return t;
}

Tensor noise_latent(const Tensor& latent, const Tensor& clean_latent, const Tensor& denoise_mask,
                    const Tensor& noise, float noise_scale) {
  LTX2_CHECK(noise.shape() == latent.shape(), "noiser: noise {} does not match latent {}",
             shape_str(noise.shape()), shape_str(latent.shape()));
  // lerp(a, b, w) = a + w * (b - a)
  Tensor noised = ops::add(latent, ops::mul(ops::sub(noise, latent), noise_scale));
  return ops::add(clean_latent, ops::mul(ops::sub(noised, clean_latent), denoise_mask));
}

}  // namespace ltx2::pipeline
