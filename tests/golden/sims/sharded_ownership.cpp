// Stable key ownership for sharded state dicts (multigpu.md 7.2).
#include "golden/sims/sharded_ownership.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "golden/sims/md5.h"

namespace ltx2::golden {

int stable_owner(std::string_view key, int world_size) {
  LTX2_CHECK(world_size >= 1, "stable_owner: world size must be >= 1, got {}", world_size);
  Md5Digest d = md5(key);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | d[i];
  return static_cast<int>(v % static_cast<uint64_t>(world_size));
}

ShardOwnership assign_shard_owners(const std::vector<std::string>& keys, const std::vector<int64_t>& bytes,
                                   int world_size) {
  LTX2_CHECK(keys.size() == bytes.size(), "assign_shard_owners: {} keys but {} byte sizes", keys.size(),
             bytes.size());
  static constexpr std::string_view kScaleSuffix = ".weight_scale";
  std::unordered_map<std::string_view, size_t> index_of;
  for (size_t i = 0; i < keys.size(); ++i) index_of.emplace(keys[i], i);

  ShardOwnership out;
  out.owner_of.resize(keys.size());
  out.keys_by_owner.resize(world_size);
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string_view key = keys[i];
    std::string_view owner_key = key;
    std::string sibling;
    if (key.size() > kScaleSuffix.size() && key.ends_with(kScaleSuffix)) {
      // The reference replaces every ".weight_scale" occurrence; keys hold at most one.
      sibling = std::string(key.substr(0, key.size() - kScaleSuffix.size())) + ".weight";
      if (index_of.count(sibling)) owner_key = sibling;
    }
    out.owner_of[i] = stable_owner(owner_key, world_size);
    out.keys_by_owner[out.owner_of[i]].push_back(static_cast<int64_t>(i));
  }
  for (auto& owned : out.keys_by_owner)
    std::stable_sort(owned.begin(), owned.end(), [&](int64_t a, int64_t b) { return bytes[a] > bytes[b]; });
  return out;
}

}  // namespace ltx2::golden
