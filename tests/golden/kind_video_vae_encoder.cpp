// Check runner for video VAE encoder cases: encodes in.video (out.latent) and its first frame
// alone, the image-conditioning path (out.latent_first_frame), and compares every mid.*.
#include "golden/kinds.h"
#include "golden/traced_tensors.h"
#include "models/video_vae/encoder.h"

namespace ltx2::golden {

namespace {

void run_video_vae_encoder(const GoldenCase& c, Report& report) {
  const Tolerance tol = fp32_tolerance(c);
  const auto encoder = video_vae::VideoEncoder::from_weights(c.weights());
  const Tensor video = c.tensor("in.video");
  TracedTensors traced;
  const Tensor latent =
      encoder.encode(video, [&](const std::string& n, const Tensor& t) { traced.record(n, t); });
  report.check("out.latent", latent, c.tensor("out.latent"), tol);
  if (c.has("out.latent_first_frame"))
    report.check("out.latent_first_frame", encoder.encode_image(video.slice(2, 0, 1)),
                 c.tensor("out.latent_first_frame"), tol);
  traced.check_mids(c, report, tol);
}

const bool registered = register_kind_runner("video_vae_encoder", &run_video_vae_encoder);

}  // namespace

}  // namespace ltx2::golden
