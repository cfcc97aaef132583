// VAE patchify / unpatchify as views plus one copy.
#include "models/video_vae/patchify.h"

#include "core/error.h"

namespace ltx2::video_vae {

Tensor patchify(const Tensor& x, int64_t p) {
  LTX2_CHECK(x.dim() == 5 && x.size(3) % p == 0 && x.size(4) % p == 0,
             "patchify: {} not divisible into {}x{} patches", x.str(), p, p);
  const int64_t B = x.size(0), C = x.size(1), F = x.size(2), H = x.size(3) / p, W = x.size(4) / p;
  // [B, C, F, H, q, W, r] -> [B, C, r, q, F, H, W]
  Tensor v = x.contiguous().view({B, C, F, H, p, W, p}).permute({0, 1, 6, 4, 2, 3, 5});
  return v.contiguous().view({B, C * p * p, F, H, W});
}

Tensor unpatchify(const Tensor& x, int64_t p) {
  LTX2_CHECK(x.dim() == 5 && x.size(1) % (p * p) == 0, "unpatchify: {} channels not divisible by {}", x.str(),
             p * p);
  const int64_t B = x.size(0), C = x.size(1) / (p * p), F = x.size(2), H = x.size(3), W = x.size(4);
  // [B, C, r, q, F, H, W] -> [B, C, F, H, q, W, r]
  Tensor v = x.contiguous().view({B, C, p, p, F, H, W}).permute({0, 1, 4, 5, 3, 6, 2});
  return v.contiguous().view({B, C, F, H * p, W * p});
}

}  // namespace ltx2::video_vae
