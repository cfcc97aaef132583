// Check runner for "guiders" cases: the delta guiders (built from their constructor strings in
// case.json), projection_coef, MultiModalGuider.calculate, the skip-step rule and the
// sigma-binned guider factory.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "core/error.h"
#include "golden/kinds.h"
#include "ops/elementwise.h"
#include "pipeline/guiders.h"

namespace ltx2::golden {
namespace {

// "Name(a=1.0, b=2)" -> name and arguments (only the first parenthesis group is read).
struct GuiderSpec {
  std::string cls;
  std::map<std::string, float> args;
  float arg(const std::string& key, float fallback) const {
    auto it = args.find(key);
    return it == args.end() ? fallback : it->second;
  }
};

GuiderSpec parse_guider(const std::string& text) {
  static const std::regex head(R"(^\s*(\w+)\(([^)]*)\))");
  std::smatch m;
  LTX2_CHECK(std::regex_search(text, m, head), "guiders: cannot parse guider '{}'", text);
  GuiderSpec g{m[1].str(), {}};
  static const std::regex kv(R"((\w+)\s*=\s*([-+0-9.eE]+))");
  const std::string inner = m[2].str();
  for (std::sregex_iterator it(inner.begin(), inner.end(), kv), end; it != end; ++it)
    g.args[(*it)[1].str()] = std::stof((*it)[2].str());
  return g;
}

// The in.* tensor names of every "fn(in.a, in.b, ...)" call of `fn` in text, in order.
std::vector<std::vector<std::string>> parse_calls(const std::string& text, const std::string& fn) {
  std::vector<std::vector<std::string>> calls;
  const std::regex call(fn + R"(\(([^)]*)\))");
  static const std::regex name(R"(in\.[\w.]+)");
  for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
    const std::string inner = (*it)[1].str();
    std::vector<std::string> args;
    for (std::sregex_iterator a(inner.begin(), inner.end(), name), e; a != e; ++a) args.push_back(a->str());
    calls.push_back(args);
  }
  return calls;
}

Tensor flag(bool b) {
  return Tensor::scalar(b ? 1.0f : 0.0f);
}

void check_out(const GoldenCase& c, Report& report, const std::string& name, const Tensor& got,
               const Tolerance& tol) {
  if (!c.has(name)) return report.fail(name, "missing in io.safetensors");
  report.check(name, got, c.tensor(name), tol);
}

void run_delta_guider(const GoldenCase& c, Report& report, const nlohmann::json& entry,
                      const Tolerance& tol) {
  const std::string name = entry.at("name").get<std::string>();
  const GuiderSpec g = parse_guider(entry.at("guider").get<std::string>());
  const std::string call = entry.at("call").get<std::string>();
  const auto calls = parse_calls(call, "delta");
  LTX2_CHECK(!calls.empty(), "guiders: {}: no delta(...) call in '{}'", name, call);
  std::optional<pipeline::LegacyApgGuider> legacy;
  if (g.cls == "LegacyStatefulAPGGuider")
    legacy.emplace(g.arg("scale", 1), g.arg("eta", 1), g.arg("norm_threshold", 5), g.arg("momentum", 0));
  auto delta = [&](const Tensor& cond, const Tensor& other, bool* enabled) -> Tensor {
    if (g.cls == "CFGGuider") {
      pipeline::CfgGuider guider{g.arg("scale", 1)};
      *enabled = guider.enabled();
      return guider.delta(cond, other);
    }
    if (g.cls == "CFGStarRescalingGuider") {
      pipeline::CfgStarGuider guider{g.arg("scale", 1)};
      *enabled = guider.enabled();
      return guider.delta(cond, other);
    }
    if (g.cls == "STGGuider") {
      pipeline::StgGuider guider{g.arg("scale", 0)};
      *enabled = guider.enabled();
      return guider.delta(cond, other);
    }
    if (g.cls == "LtxAPGGuider") {
      pipeline::ApgGuider guider{g.arg("scale", 1), g.arg("eta", 1), g.arg("norm_threshold", 0)};
      *enabled = guider.enabled();
      return guider.delta(cond, other);
    }
    if (legacy) {
      *enabled = legacy->enabled();
      return legacy->delta(cond, other);
    }
    LTX2_FAIL("guiders: {}: unknown guider class '{}'", name, g.cls);
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    LTX2_CHECK(calls[k].size() == 2, "guiders: {}: delta call {} needs two inputs", name, k + 1);
    const Tensor cond = c.tensor(calls[k][0]);
    bool enabled = false;
    const Tensor d = delta(cond, c.tensor(calls[k][1]), &enabled);
    const std::string out =
        "out." + name + (calls.size() > 1 ? ".delta_call" + std::to_string(k + 1) : ".delta");
    check_out(c, report, out, d, tol);
    if (call.find("combined") != std::string::npos)
      check_out(c, report, "out." + name + ".combined", ops::add(cond, d), tol);
    if (entry.contains("enabled"))
      report.check(name + ".enabled", flag(enabled), flag(entry["enabled"].get<bool>()), {});
  }
}

void run_guiders(const GoldenCase& c, Report& report) {
  const nlohmann::json& spec = c.spec();
  const Tolerance tol = parse_tolerance(spec.at("tolerance"));
  for (const auto& entry : spec.at("delta_guiders")) run_delta_guider(c, report, entry, tol);

  const nlohmann::json projection_calls = spec.value("projection_coef_calls", nlohmann::json::object());
  for (const auto& [name, call] : projection_calls.items()) {
    const auto calls = parse_calls(call.get<std::string>(), "projection_coef");
    LTX2_CHECK(calls.size() == 1 && calls[0].size() == 2, "guiders: cannot read call '{}'", call.dump());
    check_out(c, report, "out." + name,
              pipeline::projection_coef(c.tensor(calls[0][0]), c.tensor(calls[0][1])), tol);
  }

  const auto mm_calls = parse_calls(spec.at("multimodal_call").get<std::string>(), "calculate");
  LTX2_CHECK(mm_calls.size() == 1 && mm_calls[0].size() == 4, "guiders: cannot read multimodal_call");
  std::vector<Tensor> passes;
  for (const auto& n : mm_calls[0]) passes.push_back(c.tensor(n));
  for (const auto& entry : spec.at("multimodal")) {
    const std::string name = entry.at("name").get<std::string>();
    const auto& p = entry.at("params");
    pipeline::MultiModalGuiderParams params;
    params.cfg_scale = p.at("cfg_scale").get<float>();
    params.stg_scale = p.at("stg_scale").get<float>();
    params.stg_blocks = p.at("stg_blocks").get<std::vector<int>>();
    params.rescale_scale = p.at("rescale_scale").get<float>();
    params.modality_scale = p.at("modality_scale").get<float>();
    params.skip_step = p.at("skip_step").get<int>();
    const pipeline::MultiModalGuider guider(params);
    check_out(c, report, "out." + name, guider.calculate(passes[0], passes[1], passes[2], passes[3]), tol);
    const std::string zero_passes = "out." + name + ".float_zero_passes";
    if (c.has(zero_passes)) {
      const Tensor none;
      check_out(c, report, zero_passes,
                guider.calculate(passes[0], guider.do_unconditional_generation() ? passes[1] : none,
                                 guider.do_perturbed_generation() ? passes[2] : none,
                                 guider.do_isolated_modality_generation() ? passes[3] : none),
                tol);
    }
    const std::pair<const char*, bool> flags[] = {
        {"do_unconditional_generation", guider.do_unconditional_generation()},
        {"do_perturbed_generation", guider.do_perturbed_generation()},
        {"do_isolated_modality_generation", guider.do_isolated_modality_generation()},
    };
    for (const auto& [key, value] : flags)
      if (entry.contains(key)) report.check(name + "." + key, flag(value), flag(entry[key].get<bool>()), {});
  }

  const nlohmann::json skip_tables = spec.value("should_skip_step_by_skip_step", nlohmann::json::object());
  for (const auto& [skip, expected] : skip_tables.items()) {
    pipeline::MultiModalGuiderParams params;
    params.skip_step = std::stoi(skip);
    const pipeline::MultiModalGuider guider(params);
    std::vector<float> got, want;
    for (size_t i = 0; i < expected.size(); ++i) {
      got.push_back(guider.should_skip_step(static_cast<int>(i)) ? 1.0f : 0.0f);
      want.push_back(expected[i].get<bool>() ? 1.0f : 0.0f);
    }
    const Shape shape{static_cast<int64_t>(got.size())};
    report.check("should_skip_step.skip" + skip, Tensor::from_vector(got, shape),
                 Tensor::from_vector(want, shape), {});
  }

  // "factory_from_dict_{0.9:cfg5,0.5:cfg3,0.1:cfg1.5}_cfg_for_sigma": bins and expected cfg per sigma.
  for (const auto& [key, table] : spec.items()) {
    static const std::regex factory(R"(^factory_from_dict_\{(.*)\}_cfg_for_sigma$)");
    std::smatch m;
    if (!std::regex_match(key, m, factory)) continue;
    std::map<double, pipeline::MultiModalGuiderParams> bins;
    static const std::regex bin(R"(([0-9.]+):cfg([0-9.]+))");
    const std::string body = m[1].str();
    for (std::sregex_iterator it(body.begin(), body.end(), bin), end; it != end; ++it) {
      pipeline::MultiModalGuiderParams p;
      p.cfg_scale = std::stof((*it)[2].str());
      bins[std::stod((*it)[1].str())] = p;
    }
    const auto f = pipeline::MultiModalGuiderFactory::from_bins(bins);
    std::vector<float> got, want;
    for (const auto& [sigma, cfg] : table.items()) {
      got.push_back(f.params_for_sigma(std::stod(sigma)).cfg_scale);
      want.push_back(cfg.get<float>());
    }
    const Shape shape{static_cast<int64_t>(got.size())};
    report.check("factory.cfg_for_sigma", Tensor::from_vector(got, shape), Tensor::from_vector(want, shape),
                 {});
  }
}

const bool registered = register_kind_runner("guiders", &run_guiders);

}  // namespace
}  // namespace ltx2::golden
