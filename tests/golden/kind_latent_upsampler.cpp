// Check runner for latent upsampler cases (x2 and rational): out.latent through upsample_video()
// with the case's VAE statistics, out.upsampled_raw straight from the upsampler, and every mid.*.
#include "golden/kinds.h"
#include "golden/traced_tensors.h"
#include "models/upsampler/latent_upsampler.h"

namespace ltx2::golden {

namespace {

void run_latent_upsampler(const GoldenCase& c, Report& report) {
  const Tolerance tol = fp32_tolerance(c);
  const auto up = upsampler::LatentUpsampler::from_weights(c.weights());
  const video_vae::LatentStatistics stats(c.tensor("in.vae_mean_of_means"), c.tensor("in.vae_std_of_means"));
  const Tensor latent = c.tensor("in.latent");
  report.check("out.latent", upsampler::upsample_video(up, latent, stats), c.tensor("out.latent"), tol);
  TracedTensors traced;
  const Tensor unnormalized = stats.un_normalize(latent);
  traced.record("latent_unnormalized", unnormalized);
  const Tensor raw =
      up.forward(unnormalized, [&](const std::string& n, const Tensor& t) { traced.record(n, t); });
  if (c.has("out.upsampled_raw")) report.check("out.upsampled_raw", raw, c.tensor("out.upsampled_raw"), tol);
  traced.check_mids(c, report, tol);
}

const bool registered = register_kind_runner("latent_upsampler", &run_latent_upsampler);

}  // namespace

}  // namespace ltx2::golden
