// Check runner for `sharded_ownership` cases: the raw md5 owner of every key in case.json "keys"
// for each world size in in.world_sizes (out.owners [n_keys, n_world_sizes]).
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "golden/sims/sharded_ownership.h"

namespace ltx2::golden {

namespace {

void run_sharded_ownership(const GoldenCase& c, Report& report) {
  const auto keys = c.spec().at("keys").get<std::vector<std::string>>();
  const std::vector<int64_t> world_sizes = c.tensor("in.world_sizes").to_vector_i64();
  std::vector<int64_t> owners;
  owners.reserve(keys.size() * world_sizes.size());
  for (const std::string& key : keys)
    for (int64_t ws : world_sizes) owners.push_back(stable_owner(key, static_cast<int>(ws)));
  check_output(
      c, report, "owners",
      i64_tensor(owners, {static_cast<int64_t>(keys.size()), static_cast<int64_t>(world_sizes.size())}), {});
}

}  // namespace

static const bool registered = register_kind_runner("sharded_ownership", &run_sharded_ownership);

}  // namespace ltx2::golden
