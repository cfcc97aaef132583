// Check runner for `sharded_plan` cases: effective owners (weight_scale co-location), per-owner
// broadcast order, shard sizes, and the staging-buffer round plan at each capacity in
// case.json "capacities_bytes" (out.plan_capK rows: owner, round, key, byte offset, bytes).
#include "core/error.h"
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "golden/sims/broadcast_plan.h"
#include "golden/sims/sharded_ownership.h"

namespace ltx2::golden {

namespace {

void run_sharded_plan(const GoldenCase& c, Report& report) {
  const auto keys = c.spec().at("keys").get<std::vector<std::string>>();
  const int world_size = c.spec().at("world_size").get<int>();
  const std::vector<int64_t> numel = c.tensor("in.key_numel").to_vector_i64();
  const std::vector<int64_t> elem = c.tensor("in.key_element_size").to_vector_i64();
  const auto n = static_cast<int64_t>(keys.size());
  std::vector<int64_t> bytes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) bytes[i] = numel.at(i) * elem.at(i);

  ShardOwnership own = assign_shard_owners(keys, bytes, world_size);
  check_output(c, report, "key_sizes", i64_tensor(bytes, {n}), {});
  check_output(c, report, "owner_of",
               i64_tensor(std::vector<int64_t>(own.owner_of.begin(), own.owner_of.end()), {n}), {});

  std::vector<int64_t> groups, shard_sizes;
  for (int r = 0; r < world_size; ++r) {
    shard_sizes.push_back(static_cast<int64_t>(own.keys_by_owner[r].size()));
    for (size_t p = 0; p < own.keys_by_owner[r].size(); ++p)
      groups.insert(groups.end(), {r, static_cast<int64_t>(p), own.keys_by_owner[r][p]});
  }
  check_output(c, report, "owner_groups", i64_tensor(groups, {static_cast<int64_t>(groups.size() / 3), 3}),
               {});
  check_output(c, report, "local_shard_sizes", i64_tensor(shard_sizes, {world_size}), {});

  const auto capacities = c.spec().at("capacities_bytes").get<std::vector<int64_t>>();
  for (size_t k = 0; k < capacities.size(); ++k) {
    std::vector<int64_t> rows;
    for (int r = 0; r < world_size; ++r) {
      auto rounds = plan_broadcast_rounds(own.keys_by_owner[r], bytes, capacities[k]);
      for (size_t i = 0; i < rounds.size(); ++i)
        for (const auto& ch : rounds[i])
          rows.insert(rows.end(), {r, static_cast<int64_t>(i), ch.key, ch.offset, ch.bytes});
    }
    check_output(c, report, fmt::format("plan_cap{}", k),
                 i64_tensor(rows, {static_cast<int64_t>(rows.size() / 5), 5}), {});
  }
}

}  // namespace

static const bool registered = register_kind_runner("sharded_plan", &run_sharded_plan);

}  // namespace ltx2::golden
