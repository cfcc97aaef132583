// The vae_rank_sim fixtures' stub decoder, on CPU float32.
#include "golden/vae_stub_decoder.h"

#include <cmath>

#include "core/error.h"

namespace ltx2::golden {

namespace {
float sigmoid(float x) {
  return 1.f / (1.f + std::exp(-x));
}
}  // namespace

Tensor vae_stub_decode(const Tensor& latent_tile, const VaeScale& scale) {
  LTX2_CHECK(latent_tile.dim() == 5 && latent_tile.size(0) == 1 && latent_tile.size(1) >= 3,
             "stub decoder: latent tile must be [1, C>=3, F, H, W], got {}", shape_str(latent_tile.shape()));
  const int64_t f = latent_tile.size(2), h = latent_tile.size(3), w = latent_tile.size(4);
  const std::vector<float> x = latent_tile.contiguous().to_vector();
  double total = 0;
  for (float v : x) total += v;
  const float shift = 0.2f * sigmoid(static_cast<float>(total / static_cast<double>(x.size())));
  const int64_t pf = (f - 1) * scale[0] + 1, ph = h * scale[1], pw = w * scale[2];
  std::vector<float> px(static_cast<size_t>(pf * ph * pw * 3));
  for (int64_t t = 0; t < pf; ++t) {
    const int64_t lt = t == 0 ? 0 : (t - 1) / scale[0] + 1;
    for (int64_t y = 0; y < ph; ++y)
      for (int64_t z = 0; z < pw; ++z)
        for (int64_t ch = 0; ch < 3; ++ch) {
          const float v = x[static_cast<size_t>(((ch * f + lt) * h + y / scale[1]) * w + z / scale[2])];
          px[static_cast<size_t>(((t * ph + y) * pw + z) * 3 + ch)] = 0.8f * sigmoid(v) + shift;
        }
  }
  return Tensor::from_vector(px, {pf, ph, pw, 3});
}

}  // namespace ltx2::golden
