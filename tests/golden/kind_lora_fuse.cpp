// Check runner for "lora_fuse" cases: base weights from in.base.*, LoRAs from in.<lora>.<file key>,
// each run of case.json "strengths" fused and compared with out.<run>.<key>; the affected key set
// is compared with case.json's, and the weights must come back bit-exact after the restore.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "golden/kinds.h"
#include "pipeline/lora_fuse.h"

namespace ltx2::golden {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

void run_lora_fuse(const GoldenCase& c, Report& report) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  pipeline::WeightMap weights;
  for (const std::string& name : c.names("in.base.")) weights[name.substr(8)] = c.tensor(name);
  const pipeline::WeightMap clean = weights;

  std::map<std::string, std::shared_ptr<const LoraWeights>> loras;
  auto lora = [&](const std::string& id) {
    auto it = loras.find(id);
    if (it != loras.end()) return it->second;
    const std::string prefix = "in." + id + ".";
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& name : c.names(prefix))
      tensors.emplace_back(name.substr(prefix.size()), c.tensor(name));
    LTX2_CHECK(!tensors.empty(), "lora_fuse: no tensors {}*", prefix);
    return loras[id] = std::make_shared<const LoraWeights>(lora_from_tensors(tensors, prefix + "*"));
  };

  pipeline::LoraFusion fusion;
  // Runs and, within a run, LoRAs in case.json order (nlohmann::json keeps keys sorted).
  for (const auto& [run, strengths] : c.spec().at("strengths").items()) {
    std::vector<pipeline::LoraWithStrength> set;
    for (const auto& [id, s] : strengths.items()) set.push_back({lora(id), s.get<float>()});
    const std::vector<std::string> affected = fusion.apply(weights, set);
    const auto& expected_keys = c.spec().at("affected_keys").at(run);
    const std::vector<std::string> want = expected_keys.get<std::vector<std::string>>();
    if (affected != want)
      report.fail(run + ".affected_keys", "got [" + joined(affected) + "], expected [" + joined(want) + "]");
    for (const std::string& key : affected) {
      const std::string out = "out." + run + "." + key;
      if (!c.has(out)) {
        report.fail(out, "missing in io.safetensors");
        continue;
      }
      report.check(out, weights.at(key), c.tensor(out), tol);
    }
    fusion.restore(weights);
    bool restored = weights.size() == clean.size();
    for (const auto& [key, t] : clean)
      restored = restored && weights.count(key) && weights.at(key).shares_storage(t);
    if (!restored) report.fail(run + ".restore", "weights differ from the originals after restore");
  }
}

const bool registered = register_kind_runner("lora_fuse", &run_lora_fuse);

}  // namespace
}  // namespace ltx2::golden
