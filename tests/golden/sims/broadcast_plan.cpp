// Greedy byte packing of shard tensors into staging-buffer rounds.
#include "golden/sims/broadcast_plan.h"

#include <algorithm>

#include "core/error.h"

namespace ltx2::golden {

std::vector<BroadcastRound> plan_broadcast_rounds(const std::vector<int64_t>& keys,
                                                  const std::vector<int64_t>& key_bytes, int64_t capacity) {
  LTX2_CHECK(capacity > 0, "plan_broadcast_rounds: staging capacity must be > 0 bytes, got {}", capacity);
  std::vector<BroadcastRound> rounds;
  BroadcastRound current;
  int64_t filled = 0;
  for (int64_t key : keys) {
    LTX2_CHECK(key >= 0 && key < static_cast<int64_t>(key_bytes.size()),
               "plan_broadcast_rounds: key index {} outside {} sizes", key, key_bytes.size());
    int64_t offset = 0, size = key_bytes[key];
    while (offset < size) {
      int64_t n = std::min(size - offset, capacity - filled);
      current.push_back({key, offset, n});
      offset += n;
      filled += n;
      if (filled == capacity) {
        rounds.push_back(std::move(current));
        current.clear();
        filled = 0;
      }
    }
  }
  if (!current.empty()) rounds.push_back(std::move(current));
  return rounds;
}

}  // namespace ltx2::golden
