// Check runner for "diffusion_video_decoder" cases: LTX-2.5's diffusion video decoder
// (CausalDiffusionVAE) decoding in.latent with the reference's recorded noise in.noise, with the
// config's steps (out.video, every mid.*: mid.step0.model_out_frame0 is the first step's prediction
// at pixel frame 0) and, when the case has "one_step_run", with default_num_inference_steps
// overridden as it says (out.video_one_step, the same noise), plus the timesteps of case.json.
#include "golden/kinds.h"
#include "golden/traced_tensors.h"
#include "io/layout.h"
#include "models/video_vae/diffusion_decoder.h"

namespace ltx2::golden {

namespace {

void run_diffusion_video_decoder(const GoldenCase& c, Report& report) {
  const nlohmann::json& s = c.spec();
  const Tolerance tol = parse_tolerance(s.at("tolerance"));
  const auto set = c.weights();
  const auto decoder = video_vae::DiffusionVideoDecoder::from_weights(set);
  const Tensor latent = c.tensor("in.latent"), noise = c.tensor("in.noise");

  const std::vector<float> ts = decoder.timesteps();
  const std::vector<float> want = s.at("timesteps").get<std::vector<float>>();
  report.check("timesteps", Tensor::from_vector(ts, {static_cast<int64_t>(ts.size())}),
               Tensor::from_vector(want, {static_cast<int64_t>(want.size())}), parse_tolerance("exact"));

  TracedTensors traced;
  const Tensor video = decoder.decode(latent, noise, [&](const std::string& n, const Tensor& t) {
    traced.record(n, t);
    if (n == "step0.model_out") traced.record("step0.model_out_frame0", t.narrow(2, 0, 1).contiguous());
  });
  report.check("out.video", video, c.tensor("out.video"), tol);
  traced.check_mids(c, report, tol);

  if (s.contains("one_step_run")) {
    DiffusionVideoDecoderConfig config = decoder.config();
    config.num_inference_steps = s.at("one_step_run").at("default_num_inference_steps").get<int64_t>();
    const video_vae::DiffusionVideoDecoder one_step(
        config, WeightView(set, component_prefixes(Component::VideoDecoder), "video VAE decoder"),
        WeightView(set, component_prefixes(Component::VideoStats), "video VAE statistics"));
    report.check("out.video_one_step", one_step.decode(latent, noise), c.tensor("out.video_one_step"), tol);
  }
}

const bool registered = register_kind_runner("diffusion_video_decoder", &run_diffusion_video_decoder);

}  // namespace

}  // namespace ltx2::golden
