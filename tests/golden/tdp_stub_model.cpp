// The tdp_* fixtures' stub transformer, on CPU float32 tensors.
#include "golden/tdp_stub_model.h"

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ltx2::golden {

std::pair<Tensor, Tensor> tdp_stub_model(const parallel::TokenSequence& tile_video,
                                         const Tensor& audio_latent) {
  const Tensor& latent = tile_video.latent;  // (B, T, C)
  const int64_t batch = latent.size(0), tokens = latent.size(1);
  Tensor timesteps = tile_video.timesteps.reshape({batch, tokens, 1});
  Tensor position_sum = ops::sum(tile_video.positions.select(3, 0), 1).unsqueeze(2);  // (B, T, 1)
  Tensor video =
      ops::add(ops::add(ops::mul(latent, 0.5f), ops::mul(timesteps, 0.25f)), ops::mul(position_sum, 0.01f));
  Tensor audio;
  if (audio_latent.defined()) {
    const float mean = ops::mean(latent.reshape({-1}), 0).item();
    audio = ops::add(ops::mul(audio_latent, 0.5f), mean);
  }
  return {video, audio};
}

}  // namespace ltx2::golden
