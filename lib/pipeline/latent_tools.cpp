// Latent tools (reference: ltx_core/tools.py, components/patchifiers.py, types.py).
#include "pipeline/latent_tools.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ltx2::pipeline {

namespace {

std::array<int64_t, 3> token_grid(const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& patch) {
  std::array<int64_t, 3> g{};
  for (int i = 0; i < 3; ++i) {
    LTX2_CHECK(patch[i] > 0 && grid[i] > 0 && grid[i] % patch[i] == 0,
               "latent grid {}x{}x{} is not divisible by patch {}x{}x{}", grid[0], grid[1], grid[2], patch[0],
               patch[1], patch[2]);
    g[i] = grid[i] / patch[i];
  }
  return g;
}

}  // namespace

std::array<int64_t, 3> video_latent_grid(int64_t pixel_frames, int64_t height, int64_t width) {
  LTX2_CHECK(pixel_frames >= 1 && (pixel_frames - 1) % kVideoScaleFactors[0] == 0,
             "num frames {} must be 1 + 8k", pixel_frames);
  LTX2_CHECK(
      height > 0 && width > 0 && height % kVideoScaleFactors[1] == 0 && width % kVideoScaleFactors[2] == 0,
      "height {} and width {} must be multiples of 32", height, width);
  return {(pixel_frames - 1) / kVideoScaleFactors[0] + 1, height / kVideoScaleFactors[1],
          width / kVideoScaleFactors[2]};
}

int64_t audio_latent_frames(int64_t pixel_frames, double fps) {
  LTX2_CHECK(fps > 0, "frame rate {} must be positive", fps);
  // 16000 Hz / 160 hop / 4 downsample = 25 latent frames per second; Python rounds half to even.
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(pixel_frames) / fps * 25.0));
}

Tensor patchify_video(const Tensor& latent, const std::array<int64_t, 3>& patch) {
  LTX2_CHECK(latent.dim() == 5, "patchify_video: latent must be [B, C, F, H, W], got {}", latent.str());
  const int64_t B = latent.size(0), C = latent.size(1);
  const auto g = token_grid({latent.size(2), latent.size(3), latent.size(4)}, patch);
  return latent.contiguous()
      .view({B, C, g[0], patch[0], g[1], patch[1], g[2], patch[2]})
      .permute({0, 2, 4, 6, 1, 3, 5, 7})
      .contiguous()
      .view({B, g[0] * g[1] * g[2], C * patch[0] * patch[1] * patch[2]});
}

Tensor unpatchify_video(const Tensor& tokens, const std::array<int64_t, 3>& grid_fhw,
                        const std::array<int64_t, 3>& patch) {
  LTX2_CHECK(tokens.dim() == 3, "unpatchify_video: tokens must be [B, T, D], got {}", tokens.str());
  const auto g = token_grid(grid_fhw, patch);
  const int64_t B = tokens.size(0), per_patch = patch[0] * patch[1] * patch[2];
  LTX2_CHECK(tokens.size(1) == g[0] * g[1] * g[2] && tokens.size(2) % per_patch == 0,
             "unpatchify_video: tokens {} do not fit grid {}x{}x{}", tokens.str(), grid_fhw[0], grid_fhw[1],
             grid_fhw[2]);
  const int64_t C = tokens.size(2) / per_patch;
  return tokens.contiguous()
      .view({B, g[0], g[1], g[2], C, patch[0], patch[1], patch[2]})
      .permute({0, 4, 1, 5, 2, 6, 3, 7})
      .contiguous()
      .view({B, C, grid_fhw[0], grid_fhw[1], grid_fhw[2]});
}

Tensor patchify_audio(const Tensor& latent) {
  LTX2_CHECK(latent.dim() == 4, "patchify_audio: latent must be [B, C, T, M], got {}", latent.str());
  const int64_t B = latent.size(0), C = latent.size(1), T = latent.size(2), M = latent.size(3);
  return latent.permute({0, 2, 1, 3}).contiguous().view({B, T, C * M});
}

Tensor unpatchify_audio(const Tensor& tokens, int64_t channels, int64_t mel_bins) {
  LTX2_CHECK(tokens.dim() == 3 && tokens.size(2) == channels * mel_bins,
             "unpatchify_audio: tokens {} do not have {} x {} features", tokens.str(), channels, mel_bins);
  const int64_t B = tokens.size(0), T = tokens.size(1);
  return tokens.contiguous().view({B, T, channels, mel_bins}).permute({0, 2, 1, 3}).contiguous();
}

Tensor video_positions(int64_t batch, const std::array<int64_t, 3>& grid_fhw, double fps,
                       const std::array<int64_t, 3>& patch) {
  LTX2_CHECK(fps > 0, "frame rate {} must be positive", fps);
  const auto g = token_grid(grid_fhw, patch);
  const int64_t T = g[0] * g[1] * g[2];
  Tensor pos = Tensor::empty({batch, 3, T, 2});
  float* p = pos.data<float>();
  const float fps32 = static_cast<float>(fps);
  const int64_t tscale = kVideoScaleFactors[0];
  // Causal fix: the first latent frame covers one pixel frame, later ones the 8 frames ending at 8f.
  auto time_bound = [&](int64_t latent_f) {
    return static_cast<float>(std::max<int64_t>(latent_f * tscale + 1 - tscale, 0)) / fps32;
  };
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < g[0]; ++f)
      for (int64_t h = 0; h < g[1]; ++h)
        for (int64_t w = 0; w < g[2]; ++w) {
          const int64_t t = (f * g[1] + h) * g[2] + w;
          const int64_t idx[3] = {f, h, w};
          for (int a = 0; a < 3; ++a) {
            float* se = p + ((b * 3 + a) * T + t) * 2;
            const int64_t lo = idx[a] * patch[a], hi = (idx[a] + 1) * patch[a];
            if (a == 0) {
              se[0] = time_bound(lo);
              se[1] = time_bound(hi);
            } else {
              se[0] = static_cast<float>(lo * kVideoScaleFactors[a]);
              se[1] = static_cast<float>(hi * kVideoScaleFactors[a]);
            }
          }
        }
  return pos;
}

Tensor video_keyframes_mask(int64_t batch, const std::array<int64_t, 3>& grid_fhw,
                            const std::array<int64_t, 3>& patch) {
  const auto g = token_grid(grid_fhw, patch);
  const int64_t T = g[0] * g[1] * g[2], first = g[1] * g[2];
  Tensor mask = Tensor::zeros({batch, T, 1});
  float* m = mask.data<float>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < first; ++t) m[b * T + t] = 1.0f;
  return mask;
}

Tensor audio_positions(int64_t batch, int64_t tokens) {
  Tensor pos = Tensor::empty({batch, 1, tokens, 2});
  float* p = pos.data<float>();
  // Latent frame i covers mel frames [max(4i - 3, 0), 4i + 1); 160-sample hop at 16 kHz.
  auto bound = [](int64_t i) {
    return static_cast<float>(std::max<int64_t>(4 * i + 1 - 4, 0) * 160) / 16000.0f;
  };
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < tokens; ++t) {
      p[(b * tokens + t) * 2] = bound(t);
      p[(b * tokens + t) * 2 + 1] = bound(t + 1);
    }
  return pos;
}

}  // namespace ltx2::pipeline
