// Sequence parallelism's pure parts (multigpu.md 3.2-3.3): pad the video tokens so every rank gets
// the same count, the per-rank token ranges, each rank's shard, and the preconditions refused up
// front (heads not divisible by the world size, too many tokens for the all2all buffers).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "parallel/token_sequence.h"

namespace ltx2::parallel {

struct SequencePartition {
  std::vector<int64_t> counts;   // tokens per rank (all equal)
  std::vector<int64_t> offsets;  // exclusive prefix sum of counts
  int64_t total() const { return offsets.empty() ? 0 : offsets.back() + counts.back(); }
};

// Uniform split of total_tokens over world_size ranks; total must be a multiple of world_size.
SequencePartition sequence_partition(int64_t total_tokens, int world_size);

struct PaddedSequence {
  TokenSequence tokens;
  int64_t original_tokens = 0;
  int64_t pad = 0;
};

// Appends (-T mod W) zero tokens. With padding, attention_mask becomes a key mask hiding the pad:
// no mask -> (1, 1, Tp) (1 on real keys); a (B, T, T) mask -> (B, Tp, Tp) with the old block,
// padded query rows attending every real key and padded key columns 0. Without padding the
// sequence is returned as is.
PaddedSequence pad_for_uniform_sharding(const TokenSequence& seq, int world_size);

// Rank r's contiguous shard of an already padded sequence: latent, timesteps, positions and
// keyframes_mask are sliced; attention_mask stays full width (applied after the all2all).
TokenSequence shard_for_rank(const TokenSequence& padded, int rank, int world_size);

// Every head-parallel attention needs heads % world_size == 0; `attention` names it in the error.
void check_heads_divisible(int64_t heads, int world_size, std::string_view attention);
// The padded token count must fit the all2all buffers sized for max_tokens.
void check_token_budget(int64_t padded_tokens, int64_t max_tokens);

}  // namespace ltx2::parallel
