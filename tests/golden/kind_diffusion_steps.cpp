// Check runner for "diffusion_steps" cases: every out.* single step (Euler, Euler ancestral,
// res2s, CFG++; schedule and step index read from the tensor name), the velocity/x0 conversions,
// the res2s coefficients and the two short loops with the case's fake denoiser.
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "golden/kinds.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "pipeline/diffusion_steps.h"

namespace ltx2::golden {
namespace {

using pipeline::DenoiseState;

// The case's fake denoiser: x0 = tanh(latent @ weight) * (1 - 0.5 * sigma).
pipeline::Denoiser fake_denoiser(const Tensor& weight, const std::vector<float>& sigmas) {
  return [weight, sigmas](const std::vector<Tensor>& latents, int step) {
    return std::vector<Tensor>{
        ops::mul(ops::tanh(ops::matmul(latents[0], weight)), 1.0f - 0.5f * sigmas[step])};
  };
}

Tensor run_step(const GoldenCase& c, const std::string& name) {
  static const std::regex euler(R"(^out\.euler\.(\w+)\.i(\d+)$)");
  static const std::regex ancestral(
      R"(^out\.euler_ancestral\.eta([0-9.]+?)(?:\.snoise([0-9.]+?))?\.(\w+)\.i(\d+)$)");
  static const std::regex res2s(R"(^out\.res2s\.eta([0-9.]+?)\.(\w+)\.i(\d+)$)");
  static const std::regex cfgpp(R"(^out\.cfgpp\.eta([0-9.]+?)\.(\w+)\.i(\d+)$)");
  static const std::regex velocity(R"(^out\.to_velocity\.(\w+)\.i(\d+)$)");
  const Tensor sample = c.tensor("in.sample"), denoised = c.tensor("in.denoised");
  auto sigmas_of = [&](const std::string& sched) { return c.tensor("in.sigmas." + sched).to_vector(); };
  std::smatch m;
  if (std::regex_match(name, m, euler))
    return pipeline::EulerStep{}.step(sample, denoised, sigmas_of(m[1]), std::stoi(m[2]));
  if (std::regex_match(name, m, ancestral)) {
    const float eta = std::stof(m[1]), s_noise = m[2].matched ? std::stof(m[2]) : 1.0f;
    const pipeline::EulerAncestralStep step{eta, s_noise};
    return step.step(sample, denoised, sigmas_of(m[3]), std::stoi(m[4]),
                     eta > 0 ? c.tensor("in.noise") : Tensor());
  }
  if (std::regex_match(name, m, res2s))
    return pipeline::Res2sStep{}.step(sample, denoised, sigmas_of(m[2]), std::stoi(m[3]),
                                      c.tensor("in.noise"), std::stof(m[1]));
  if (std::regex_match(name, m, cfgpp)) {
    const float eta = std::stof(m[1]);
    const pipeline::EulerCfgPpStep step{eta, 1.0f};
    return step.step(sample, denoised, sigmas_of(m[2]), std::stoi(m[3]), c.tensor("in.uncond_denoised"),
                     eta > 0 ? c.tensor("in.noise") : Tensor());
  }
  if (std::regex_match(name, m, velocity))
    return pipeline::to_velocity(sample, sigmas_of(m[1])[std::stoul(m[2])], denoised);
  if (name == "out.to_denoised.per_token")
    return pipeline::to_denoised(sample, denoised, c.tensor("in.token_timesteps"));
  if (name == "out.res2s_coefficients") {
    std::vector<float> rows;
    const auto hs = c.spec().at("res2s").at("h").get<std::vector<double>>();
    for (double h : hs) {
      const auto k = pipeline::res2s_coefficients(h, 0.5);
      rows.insert(rows.end(),
                  {static_cast<float>(k.a21), static_cast<float>(k.b1), static_cast<float>(k.b2)});
    }
    return Tensor::from_vector(rows, {static_cast<int64_t>(hs.size()), 3});
  }
  if (name == "out.loop.euler.final_latent" || name == "out.loop.ancestral.final_latent") {
    const std::vector<float> sigmas = c.tensor("in.sigmas.distilled").to_vector();
    std::vector<DenoiseState> states = {
        {c.tensor("in.loop.x_init"), c.tensor("in.loop.clean_latent"), c.tensor("in.loop.denoise_mask")}};
    const auto denoiser = fake_denoiser(c.tensor("in.loop.fake_weight"), sigmas);
    if (name == "out.loop.euler.final_latent") {
      pipeline::euler_denoising_loop(sigmas, states, denoiser);
    } else {
      const Tensor draws = c.tensor("in.loop.ancestral.noise_draws");
      pipeline::euler_ancestral_denoising_loop(
          sigmas, states, denoiser, [&](const Shape& shape, int step, size_t) {
            LTX2_CHECK(step < draws.size(0), "diffusion_steps: no noise draw for step {}", step);
            Tensor n = draws.select(0, step).contiguous();
            LTX2_CHECK(n.shape() == shape, "diffusion_steps: noise draw {} vs latent {}",
                       shape_str(n.shape()), shape_str(shape));
            return n;
          });
    }
    return states[0].latent;
  }
  LTX2_FAIL("diffusion_steps: no rule for output '{}'", name);
}

void run_diffusion_steps(const GoldenCase& c, Report& report) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  for (const std::string& name : c.names("out.")) report.check(name, run_step(c, name), c.tensor(name), tol);
}

const bool registered = register_kind_runner("diffusion_steps", &run_diffusion_steps);

}  // namespace
}  // namespace ltx2::golden
