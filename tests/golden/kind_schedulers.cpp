// Check runner for "schedulers" cases: every sigma schedule of case.json's combos, and the
// distilled sigma lists, against out.<name>.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "golden/kinds.h"
#include "pipeline/schedulers.h"

namespace ltx2::golden {
namespace {

std::vector<float> run_combo(const nlohmann::json& combo) {
  const std::string cls = combo.at("class").get<std::string>();
  const int steps = combo.at("steps").get<int>();
  const nlohmann::json kw = combo.value("kwargs", nlohmann::json::object());
  if (cls == "LTX2Scheduler") {
    pipeline::Ltx2SchedulerParams p;
    for (const auto& [key, value] : kw.items()) {
      if (key == "max_shift")
        p.max_shift = value.get<double>();
      else if (key == "base_shift")
        p.base_shift = value.get<double>();
      else if (key == "stretch")
        p.stretch = value.get<bool>();
      else if (key == "terminal")
        p.terminal = value.get<double>();
      else if (key == "default_number_of_tokens")
        p.default_tokens = value.get<int64_t>();
      else
        LTX2_FAIL("schedulers: unknown LTX2Scheduler argument '{}'", key);
    }
    int64_t tokens = 0;
    if (combo.contains("latent_shape") && !combo["latent_shape"].is_null())
      tokens = pipeline::latent_tokens(combo["latent_shape"].get<Shape>());
    return pipeline::ltx2_sigmas(steps, tokens, p);
  }
  if (cls == "LinearQuadraticScheduler") {
    double threshold = 0.025;
    int linear_steps = -1;
    for (const auto& [key, value] : kw.items()) {
      if (key == "threshold_noise")
        threshold = value.get<double>();
      else if (key == "linear_steps")
        linear_steps = value.is_null() ? -1 : value.get<int>();
      else
        LTX2_FAIL("schedulers: unknown LinearQuadraticScheduler argument '{}'", key);
    }
    return pipeline::linear_quadratic_sigmas(steps, threshold, linear_steps);
  }
  if (cls == "BetaScheduler") {
    double alpha = 0.6, beta = 0.6;
    for (const auto& [key, value] : kw.items()) {
      if (key == "alpha")
        alpha = value.get<double>();
      else if (key == "beta")
        beta = value.get<double>();
      else
        LTX2_FAIL("schedulers: unknown BetaScheduler argument '{}'", key);
    }
    return pipeline::beta_sigmas(steps, alpha, beta);
  }
  LTX2_FAIL("schedulers: unknown scheduler class '{}'", cls);
}

void run_schedulers(const GoldenCase& c, Report& report) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  for (const auto& combo : c.spec().at("combos")) {
    const std::string name = "out." + combo.at("name").get<std::string>();
    if (!c.has(name)) {
      report.fail(name, "missing in io.safetensors");
      continue;
    }
    report.check(name, pipeline::sigmas_tensor(run_combo(combo)), c.tensor(name), tol);
  }
  const std::pair<const char*, const std::vector<float>*> lists[] = {
      {"out.distilled.stage1", &pipeline::distilled_sigmas()},
      {"out.distilled.stage2", &pipeline::stage2_distilled_sigmas()},
      {"out.distilled.tdp", &pipeline::tdp_distilled_sigmas()},
  };
  for (const auto& [name, sigmas] : lists)
    if (c.has(name)) report.check(name, pipeline::sigmas_tensor(*sigmas), c.tensor(name), tol);
}

const bool registered = register_kind_runner("schedulers", &run_schedulers);

}  // namespace
}  // namespace ltx2::golden
