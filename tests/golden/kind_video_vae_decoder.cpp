// Check runner for video VAE decoder cases (plain and timestep-conditioned): decodes in.latent
// (or, when the case pre-mixed decode noise, in.latent_premixed with in.timestep) and compares
// out.video and every mid.*. For conditioned cases it also checks our noise mix against the
// fixture's pre-mixed latent.
#include "golden/kinds.h"
#include "golden/traced_tensors.h"
#include "models/video_vae/decoder.h"

namespace ltx2::golden {

namespace {

void run_video_vae_decoder(const GoldenCase& c, Report& report) {
  const Tolerance tol = fp32_tolerance(c);
  const auto decoder = video_vae::VideoDecoder::from_weights(c.weights());
  Tensor latent = c.tensor("in.latent"), timestep;
  if (c.has("in.latent_premixed")) {
    const float scale = c.spec().value("decode_noise_scale", video_vae::kDecodeNoiseScale);
    const Tensor premixed = c.tensor("in.latent_premixed");
    report.check("in.latent_premixed", video_vae::mix_decode_noise(latent, c.tensor("in.noise"), scale),
                 premixed, tol);
    latent = premixed;
  }
  if (c.has("in.timestep")) timestep = c.tensor("in.timestep");
  TracedTensors traced;
  const Tensor video =
      decoder.decode(latent, timestep, [&](const std::string& n, const Tensor& t) { traced.record(n, t); });
  report.check("out.video", video, c.tensor("out.video"), tol);
  traced.check_mids(c, report, tol);
}

const bool registered = register_kind_runner("video_vae_decoder", &run_video_vae_decoder);

}  // namespace

}  // namespace ltx2::golden
