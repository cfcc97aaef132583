// Check runner for "latent_state" cases: per stage of case.json, the initial state of
// target_latent_shape (zeros or an in.* latent), the conditioning items as written there
// ("VideoConditionByLatentIndex(in.x, strength=s, latent_idx=i)",
// "VideoConditionByKeyframeIndex(in.x, frame_idx=f, strength=s)"), then the noiser with the
// stage's in.noise_<stage> at the noise_scale its description names; every out.<stage>.* compared.
#include <regex>

#include "core/error.h"
#include "golden/kinds.h"
#include "pipeline/latent_state.h"

namespace ltx2::golden {
namespace {

std::string match_or_fail(const std::string& text, const std::string& pattern, const std::string& what) {
  std::smatch m;
  LTX2_CHECK(std::regex_search(text, m, std::regex(pattern)), "latent_state: no {} in \"{}\"", what, text);
  return m[1].str();
}

pipeline::VideoConditioning parse_item(const GoldenCase& c, const std::string& text) {
  const std::string tensor = match_or_fail(text, R"(\((in\.[A-Za-z0-9_.]+))", "input tensor");
  const float strength = std::stof(match_or_fail(text, R"(strength=([0-9.eE+-]+))", "strength"));
  if (text.rfind("VideoConditionByLatentIndex", 0) == 0)
    return pipeline::VideoConditionByLatentIndex{
        c.tensor(tensor), strength, std::stoll(match_or_fail(text, R"(latent_idx=([0-9]+))", "latent_idx"))};
  LTX2_CHECK(text.rfind("VideoConditionByKeyframeIndex", 0) == 0, "latent_state: unknown conditioning \"{}\"",
             text);
  return pipeline::VideoConditionByKeyframeIndex{
      c.tensor(tensor), std::stoll(match_or_fail(text, R"(frame_idx=([0-9]+))", "frame_idx")), strength};
}

void run_latent_state(const GoldenCase& c, Report& report) {
  const auto& spec = c.spec();
  const Tolerance tol = parse_tolerance(spec.at("tolerance"));
  const Shape shape = spec.at("target_latent_shape").get<Shape>();
  const std::array<int64_t, 3> grid = {shape[2], shape[3], shape[4]};
  const double fps = spec.at("fps").get<double>();
  for (const std::string stage : {"stage1", "stage2"}) {
    if (!spec.contains(stage)) continue;
    const auto& s = spec.at(stage);
    const std::string init = s.at("initial_latent").get<std::string>();
    pipeline::LatentState state =
        pipeline::create_video_state(shape, fps, init == "zeros" ? Tensor() : c.tensor(init));
    for (const auto& item : s.at("conditionings"))
      pipeline::apply_conditioning(state, parse_item(c, item), grid, fps);
    const float scale = std::stof(
        match_or_fail(s.at("noiser").get<std::string>(), R"(noise_scale=([0-9.eE+-]+))", "noise_scale"));
    pipeline::apply_noise(state, c.tensor("in.noise_" + stage), scale);
    const std::string out = "out." + stage + ".";
    report.check(out + "latent", state.latent, c.tensor(out + "latent"), tol);
    report.check(out + "clean_latent", state.clean_latent, c.tensor(out + "clean_latent"), tol);
    report.check(out + "denoise_mask", state.denoise_mask, c.tensor(out + "denoise_mask"), tol);
    report.check(out + "positions", state.positions, c.tensor(out + "positions"), tol);
    report.check(out + "keyframes_mask", state.keyframes_mask, c.tensor(out + "keyframes_mask"), tol);
    report.check(out + "timesteps_at_sigma1", pipeline::state_timesteps(state, 1.0f),
                 c.tensor(out + "timesteps_at_sigma1"), tol);
  }
}

const bool registered = register_kind_runner("latent_state", &run_latent_state);

}  // namespace
}  // namespace ltx2::golden
