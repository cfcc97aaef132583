// Per-rank LoRA work split over the sharded ownership.
#include "golden/sims/lora_shard.h"

#include "core/error.h"

namespace ltx2::golden {

std::vector<std::string> owned_keys(const ShardOwnership& ownership, const std::vector<std::string>& keys,
                                    int rank) {
  LTX2_CHECK(rank >= 0 && rank < static_cast<int>(ownership.keys_by_owner.size()),
             "owned_keys: rank {} outside world size {}", rank, ownership.keys_by_owner.size());
  std::vector<std::string> out;
  for (int64_t i : ownership.keys_by_owner[rank]) out.push_back(keys.at(static_cast<size_t>(i)));
  return out;
}

std::set<std::string> allowed_lora_keys(const std::vector<std::string>& owned) {
  static const std::string kWeight = ".weight";
  std::set<std::string> out;
  for (const std::string& key : owned) {
    if (key.size() <= kWeight.size() ||
        key.compare(key.size() - kWeight.size(), kWeight.size(), kWeight) != 0)
      continue;
    const std::string module = key.substr(0, key.size() - kWeight.size());
    out.insert(module + ".lora_A.weight");
    out.insert(module + ".lora_B.weight");
  }
  return out;
}

}  // namespace ltx2::golden
