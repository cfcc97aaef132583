// The round plan of a bucketed shard broadcast (multigpu.md 7.3): an owner's tensors are packed
// byte-wise, in order, into a staging buffer of fixed capacity; each full (or final) buffer is one
// broadcast round, and a tensor larger than the space left continues in the next round.
// The reference's scheme, simulated to replay its fixtures: ltx2's ranks each load their own weights
// and fuse LoRAs in place, so no run of ours shards or broadcasts state dicts.
#pragma once

#include <cstdint>
#include <vector>

namespace ltx2::golden {

struct BroadcastChunk {
  int64_t key = 0;     // index into the caller's key list
  int64_t offset = 0;  // byte offset inside that tensor
  int64_t bytes = 0;   // chunk length
};

using BroadcastRound = std::vector<BroadcastChunk>;  // chunks at consecutive staging offsets

// keys: indices in broadcast order; key_bytes: byte size per key index. Every rank computes the
// same plan, so receivers know how much each round carries without extra messages.
std::vector<BroadcastRound> plan_broadcast_rounds(const std::vector<int64_t>& keys,
                                                  const std::vector<int64_t>& key_bytes, int64_t capacity);

}  // namespace ltx2::golden
