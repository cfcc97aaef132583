// Check runner for `lora_tracker_sim` cases: each simulated rank takes the keys it owns (sharded
// ownership), resets them from the clean weights, reads only the LoRA factors of those keys and
// fuses them; the union of the owners' results is what the broadcast leaves on every rank.
// Compares owned and allowed key lists with case.json "per_rank", out.r<R>.<key> and
// out.after_broadcast.<key>. The LoRA tensors come from this case (in.<file>.<file key>) or, when
// absent, from the sibling case named by case.json "same_random_draw_as".
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "golden/sims/lora_shard.h"
#include "io/lora.h"
#include "pipeline/lora_fuse.h"

namespace ltx2::golden {

namespace {

namespace fs = std::filesystem;

// The case holding in.<file>.* LoRA tensors: this one, or the sibling folder whose case.json
// "fixture" is this case's "same_random_draw_as".
std::unique_ptr<GoldenCase> lora_source(const GoldenCase& c, const std::string& file) {
  if (!c.names("in." + file + ".").empty()) return std::make_unique<GoldenCase>(c.dir());
  // "dev_lora_fuse (after_broadcast must equal ...)": the fixture name is the first word.
  std::string wanted = c.spec().value("same_random_draw_as", "");
  wanted = wanted.substr(0, wanted.find(' '));
  LTX2_CHECK(!wanted.empty(), "{}: no in.{}.* tensors and no same_random_draw_as", c.name(), file);
  fs::path here = fs::absolute(c.dir()).lexically_normal();
  if (!here.has_filename()) here = here.parent_path();  // "…/case/" names the folder too
  for (const auto& entry : fs::directory_iterator(here.parent_path())) {
    const fs::path spec = entry.path() / "case.json";
    if (!fs::exists(spec)) continue;
    std::ifstream in(spec);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.value("fixture", "") == wanted)
      return std::make_unique<GoldenCase>(entry.path().string());
  }
  LTX2_FAIL("{}: LoRA tensors in.{}.* not found here nor in a sibling case with fixture '{}'", c.name(), file,
            wanted);
}

// The LoRA `file` restricted to the factors a rank may read (keys after renaming).
std::shared_ptr<const LoraWeights> read_allowed(const GoldenCase& src, const std::string& file,
                                                const std::set<std::string>& allowed) {
  const std::string prefix = "in." + file + ".";
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : src.names(prefix)) {
    const std::string file_key = name.substr(prefix.size());
    if (allowed.count(lora_renamed_key(file_key))) tensors.emplace_back(file_key, src.tensor(name));
  }
  return std::make_shared<const LoraWeights>(lora_from_tensors(tensors, src.name() + "/" + prefix + "*"));
}

void check_key_list(Report& report, const std::string& name, const std::vector<std::string>& got,
                    const std::vector<std::string>& expected) {
  CompareRow row;
  row.name = name;
  row.pass = got == expected;
  if (!row.pass) row.note = std::to_string(got.size()) + " keys, expected " + std::to_string(expected.size());
  report.add(row);
}

void run_lora_tracker_sim(const GoldenCase& c, Report& report) {
  const int world_size = c.spec().at("world_size").get<int>();
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  std::vector<std::string> keys;
  std::vector<int64_t> bytes;
  for (const std::string& name : c.names("in.base.")) {
    keys.push_back(name.substr(8));
    bytes.push_back(static_cast<int64_t>(c.tensor(name).nbytes()));
  }
  const ShardOwnership ownership = assign_shard_owners(keys, bytes, world_size);

  std::map<std::string, std::unique_ptr<GoldenCase>> sources;
  std::map<std::string, Tensor> after_broadcast;
  for (int rank = 0; rank < world_size; ++rank) {
    std::vector<std::string> owned = owned_keys(ownership, keys, rank);
    const std::set<std::string> allowed = allowed_lora_keys(owned);
    std::vector<std::string> sorted_owned = owned;
    std::sort(sorted_owned.begin(), sorted_owned.end());
    for (const auto& r : c.spec().value("per_rank", nlohmann::json::array()))
      if (r.at("rank").get<int>() == rank) {
        check_key_list(report, fmt::format("rank {} owned_keys", rank), sorted_owned,
                       r.at("owned_keys").get<std::vector<std::string>>());
        check_key_list(report, fmt::format("rank {} allowed_lora_keys", rank),
                       std::vector<std::string>(allowed.begin(), allowed.end()),
                       r.at("allowed_lora_keys").get<std::vector<std::string>>());
      }

    // The rank's working copy: stale everywhere; its owned keys reset from the clean shard.
    pipeline::WeightMap working;
    for (const std::string& key : keys) working[key] = c.tensor("in.dirty." + key);
    for (const std::string& key : owned) working[key] = c.tensor("in.base." + key);
    std::vector<pipeline::LoraWithStrength> loras;
    for (const auto& l : c.spec().at("loras")) {
      const std::string file = l.at("file").get<std::string>();
      if (!sources.count(file)) sources[file] = lora_source(c, file);
      loras.push_back({read_allowed(*sources[file], file, allowed), l.at("strength").get<float>()});
    }
    pipeline::WeightMap owned_weights;
    for (const std::string& key : owned) owned_weights[key] = working[key];
    pipeline::LoraFusion fusion;
    fusion.apply(owned_weights, loras);
    for (const std::string& key : owned) {
      check_output(c, report, fmt::format("r{}.{}", rank, key), owned_weights.at(key), tol);
      after_broadcast[key] = owned_weights.at(key);
    }
  }
  for (const std::string& key : keys)
    check_output(c, report, "after_broadcast." + key, after_broadcast.at(key), tol);
}

}  // namespace

static const bool registered = register_kind_runner("lora_tracker_sim", &run_lora_tracker_sim);

}  // namespace ltx2::golden
