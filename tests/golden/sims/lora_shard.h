// Which part of a LoRA hot-swap each rank does (multigpu.md 7.4): a rank resets and fuses only the
// weights it owns, so it reads only the LoRA factors of those weights; the owners' results are
// then broadcast to everyone.
// The reference's scheme, simulated to replay its fixtures: ltx2's ranks each load their own weights
// and fuse LoRAs in place, so no run of ours shards or broadcasts state dicts.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "golden/sims/sharded_ownership.h"

namespace ltx2::golden {

// keys[i] for every i that `rank` owns, in the owner's broadcast order.
std::vector<std::string> owned_keys(const ShardOwnership& ownership, const std::vector<std::string>& keys,
                                    int rank);

// "<m>.lora_A.weight" and "<m>.lora_B.weight" for every owned "<m>.weight" (LoRA file keys after
// the "diffusion_model." renaming); other owned keys (biases, tables) take no LoRA.
std::set<std::string> allowed_lora_keys(const std::vector<std::string>& owned);

}  // namespace ltx2::golden
