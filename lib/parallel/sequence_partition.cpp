// Padding and sharding of the video token sequence for sequence parallelism.
#include "parallel/sequence_partition.h"

#include "core/error.h"
#include "ops/shape.h"

namespace ltx2::parallel {

SequencePartition sequence_partition(int64_t total_tokens, int world_size) {
  LTX2_CHECK(world_size >= 1, "sequence_partition: world size must be >= 1, got {}", world_size);
  LTX2_CHECK(total_tokens % world_size == 0,
             "sequence_partition: {} tokens are not divisible by world size {}; pad the sequence first",
             total_tokens, world_size);
  SequencePartition p;
  const int64_t per_rank = total_tokens / world_size;
  for (int r = 0; r < world_size; ++r) {
    p.counts.push_back(per_rank);
    p.offsets.push_back(r * per_rank);
  }
  return p;
}

namespace {

Tensor padded_attention_mask(const Tensor& user_mask, int64_t tokens, int64_t padded) {
  if (!user_mask.defined()) {
    Tensor m = Tensor::zeros({1, 1, padded});
    m.narrow(2, 0, tokens).fill_(1.f);
    return m;
  }
  LTX2_CHECK(user_mask.dim() == 3 && user_mask.size(1) == tokens && user_mask.size(2) == tokens,
             "pad_for_uniform_sharding: attention_mask must be (B, {0}, {0}), got {1}", tokens,
             shape_str(user_mask.shape()));
  Tensor m = Tensor::zeros({user_mask.size(0), padded, padded}, DType::F32, user_mask.device());
  m.narrow(1, 0, tokens).narrow(2, 0, tokens).copy_(user_mask);
  // Padded queries attend all real keys so their softmax stays defined; padded keys stay hidden.
  m.narrow(1, tokens, padded - tokens).narrow(2, 0, tokens).fill_(1.f);
  return m;
}

Tensor pad_tokens(const Tensor& x, int token_dim, int64_t pad) {
  return x.defined() ? ops::pad(x, token_dim, 0, pad, 0.f) : Tensor{};
}

}  // namespace

PaddedSequence pad_for_uniform_sharding(const TokenSequence& seq, int world_size) {
  LTX2_CHECK(world_size >= 1, "pad_for_uniform_sharding: world size must be >= 1, got {}", world_size);
  PaddedSequence out;
  out.original_tokens = seq.num_tokens();
  out.pad = (world_size - out.original_tokens % world_size) % world_size;
  if (out.pad == 0) {
    out.tokens = seq;
    return out;
  }
  const int64_t padded = out.original_tokens + out.pad;
  out.tokens.latent = pad_tokens(seq.latent, 1, out.pad);
  out.tokens.timesteps = pad_tokens(seq.timesteps, 1, out.pad);
  out.tokens.positions = pad_tokens(seq.positions, 2, out.pad);
  out.tokens.keyframes_mask = pad_tokens(seq.keyframes_mask, 1, out.pad);
  out.tokens.attention_mask = padded_attention_mask(seq.attention_mask, out.original_tokens, padded);
  return out;
}

TokenSequence shard_for_rank(const TokenSequence& padded, int rank, int world_size) {
  LTX2_CHECK(rank >= 0 && rank < world_size, "shard_for_rank: rank {} outside world size {}", rank,
             world_size);
  SequencePartition p = sequence_partition(padded.num_tokens(), world_size);
  const int64_t start = p.offsets[rank], count = p.counts[rank];
  TokenSequence shard;
  shard.latent = padded.latent.narrow(1, start, count);
  if (padded.timesteps.defined()) shard.timesteps = padded.timesteps.narrow(1, start, count);
  if (padded.positions.defined()) shard.positions = padded.positions.narrow(2, start, count);
  if (padded.keyframes_mask.defined()) shard.keyframes_mask = padded.keyframes_mask.narrow(1, start, count);
  shard.attention_mask = padded.attention_mask;
  return shard;
}

void check_heads_divisible(int64_t heads, int world_size, std::string_view attention) {
  LTX2_CHECK(
      world_size >= 1 && heads % world_size == 0,
      "sequence parallel: {} has {} heads, not divisible by world size {}; use a world size that divides "
      "the head count",
      attention, heads, world_size);
}

void check_token_budget(int64_t padded_tokens, int64_t max_tokens) {
  LTX2_CHECK(padded_tokens <= max_tokens,
             "sequence parallel: {} video tokens exceed the attention buffers' max_tokens {}; use a smaller "
             "resolution or fewer frames",
             padded_tokens, max_tokens);
}

}  // namespace ltx2::parallel
