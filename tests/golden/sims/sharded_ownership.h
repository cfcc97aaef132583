// Which rank owns which state-dict key when clean weights are sharded across ranks (the LoRA
// hot-swap backup of multigpu.md 7.2): a stable md5-derived owner per key, scaled-fp8
// `.weight_scale` keys co-located with their `.weight`, and each owner's keys in broadcast order.
// The reference's scheme, simulated to replay its fixtures: ltx2's ranks each load their own weights
// and fuse LoRAs in place, so no run of ours shards or broadcasts state dicts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ltx2::golden {

// int.from_bytes(md5(utf8 key)[:8], "little") mod world_size.
int stable_owner(std::string_view key, int world_size);

struct ShardOwnership {
  std::vector<int> owner_of;                        // per key (input order)
  std::vector<std::vector<int64_t>> keys_by_owner;  // key indices, largest bytes first (stable)
};

// `bytes[i]` is the byte size of keys[i]. A key "<x>.weight_scale" whose "<x>.weight" is also a
// key takes that key's owner, so fuse rules see both tensors on one rank.
ShardOwnership assign_shard_owners(const std::vector<std::string>& keys, const std::vector<int64_t>& bytes,
                                   int world_size);

}  // namespace ltx2::golden
