// Sharded state-dict ownership and the bucketed broadcast plan.
#include <algorithm>

#include "core/error.h"
#include "golden/sims/broadcast_plan.h"
#include "golden/sims/lora_shard.h"
#include "golden/sims/sharded_ownership.h"
#include "support/catch.h"

using namespace ltx2;
using namespace ltx2::golden;

TEST_CASE("shards: md5 owners, weight_scale co-location, every key owned exactly once") {
  REQUIRE(stable_owner("patchify_proj.weight", 1) == 0);
  // md5("patchify_proj.weight") = 26ab68bd b8a3ea86 ...: the first 8 bytes little-endian.
  const uint64_t v = 0x86eaa3b8bd68ab26ull;
  for (int ws : {2, 3, 5, 8}) REQUIRE(stable_owner("patchify_proj.weight", ws) == static_cast<int>(v % ws));

  std::vector<std::string> keys;
  std::vector<int64_t> bytes;
  for (int b = 0; b < 6; ++b) {
    keys.push_back("blocks." + std::to_string(b) + ".to_q.weight");
    keys.push_back("blocks." + std::to_string(b) + ".to_q.weight_scale");
    bytes.push_back(1000 + b);
    bytes.push_back(4);
  }
  keys.push_back("lonely.weight_scale");
  bytes.push_back(4);
  ShardOwnership own = assign_shard_owners(keys, bytes, 4);
  for (size_t i = 0; i + 1 < 12; i += 2) REQUIRE(own.owner_of[i + 1] == own.owner_of[i]);
  REQUIRE(own.owner_of[12] == stable_owner("lonely.weight_scale", 4));
  std::vector<int> seen(keys.size(), 0);
  for (int r = 0; r < 4; ++r)
    for (size_t p = 0; p < own.keys_by_owner[r].size(); ++p) {
      const int64_t k = own.keys_by_owner[r][p];
      ++seen[k];
      REQUIRE(own.owner_of[k] == r);
      if (p > 0) REQUIRE(bytes[own.keys_by_owner[r][p - 1]] >= bytes[k]);
    }
  for (int s : seen) REQUIRE(s == 1);
}

TEST_CASE("shards: rounds fill the staging buffer, split large tensors and cover every byte once") {
  const std::vector<int64_t> bytes{10, 3, 7, 0, 25};
  const std::vector<int64_t> order{4, 0, 2, 1, 3};
  auto rounds = plan_broadcast_rounds(order, bytes, 8);
  std::vector<int64_t> covered(bytes.size(), 0);
  for (size_t i = 0; i < rounds.size(); ++i) {
    int64_t filled = 0;
    for (const auto& ch : rounds[i]) {
      REQUIRE(ch.offset == covered[ch.key]);  // chunks of a tensor arrive in order
      covered[ch.key] += ch.bytes;
      filled += ch.bytes;
    }
    if (i + 1 < rounds.size()) REQUIRE(filled == 8);
    REQUIRE(filled <= 8);
  }
  REQUIRE(covered == bytes);
  REQUIRE(rounds.size() == 6);  // 45 bytes in rounds of 8
  REQUIRE_THROWS_AS(plan_broadcast_rounds(order, bytes, 0), Error);
}

TEST_CASE("shards: a rank may read LoRA factors only of the matrices it owns") {
  const std::vector<std::string> keys{"a.to_q.weight", "a.to_q.bias", "a.scale_shift_table", "b.ff.weight"};
  ShardOwnership own = assign_shard_owners(keys, {16, 4, 8, 32}, 2);
  std::vector<std::string> all;
  for (int r = 0; r < 2; ++r)
    for (const std::string& k : owned_keys(own, keys, r)) all.push_back(k);
  std::sort(all.begin(), all.end());
  std::vector<std::string> sorted_keys = keys;
  std::sort(sorted_keys.begin(), sorted_keys.end());
  REQUIRE(all == sorted_keys);
  const std::set<std::string> allowed =
      allowed_lora_keys({"a.to_q.weight", "a.to_q.bias", "a.scale_shift_table"});
  REQUIRE(allowed == std::set<std::string>{"a.to_q.lora_A.weight", "a.to_q.lora_B.weight"});
  REQUIRE_THROWS_AS(owned_keys(own, keys, 2), Error);
}
