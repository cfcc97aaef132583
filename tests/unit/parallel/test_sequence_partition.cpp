// Sequence-parallel padding, sharding and preconditions beyond the sp_padding fixture.
#include "core/error.h"
#include "ops/shape.h"
#include "parallel/sequence_partition.h"
#include "support/catch.h"
#include "support/error_text.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::parallel;

namespace {
TokenSequence random_sequence(int64_t tokens, uint64_t seed) {
  TokenSequence s;
  s.latent = test::random_tensor({2, tokens, 3}, seed);
  s.timesteps = test::random_tensor({2, tokens, 1}, seed + 1);
  s.positions = test::random_tensor({2, 3, tokens, 2}, seed + 2);
  s.keyframes_mask = test::random_tensor({2, tokens, 1}, seed + 3);
  return s;
}
}  // namespace

TEST_CASE("sp: token counts needing padding get zero tokens and a key-only mask") {
  TokenSequence seq = random_sequence(13, 10);
  PaddedSequence p = pad_for_uniform_sharding(seq, 4);
  REQUIRE(p.original_tokens == 13);
  REQUIRE(p.pad == 3);
  REQUIRE(p.tokens.num_tokens() == 16);
  REQUIRE(p.tokens.positions.shape() == Shape{2, 3, 16, 2});
  REQUIRE(test::max_abs_diff(p.tokens.latent.narrow(1, 0, 13), seq.latent) == 0.f);
  REQUIRE(test::max_abs_diff(p.tokens.latent.narrow(1, 13, 3), Tensor::zeros({2, 3, 3})) == 0.f);
  REQUIRE(test::max_abs_diff(p.tokens.positions.narrow(2, 13, 3), Tensor::zeros({2, 3, 3, 2})) == 0.f);
  REQUIRE(p.tokens.attention_mask.shape() == Shape{1, 1, 16});
  for (int64_t k = 0; k < 16; ++k) REQUIRE(p.tokens.attention_mask.item({0, 0, k}) == (k < 13 ? 1.f : 0.f));

  // The shards, in rank order, are exactly the padded sequence.
  std::vector<Tensor> latents, positions;
  for (int r = 0; r < 4; ++r) {
    TokenSequence shard = shard_for_rank(p.tokens, r, 4);
    REQUIRE(shard.num_tokens() == 4);
    REQUIRE(shard.attention_mask.shape() == Shape{1, 1, 16});
    latents.push_back(shard.latent);
    positions.push_back(shard.positions);
  }
  REQUIRE(test::max_abs_diff(ops::cat(latents, 1), p.tokens.latent) == 0.f);
  REQUIRE(test::max_abs_diff(ops::cat(positions, 2), p.tokens.positions) == 0.f);
}

TEST_CASE("sp: a user mask is extended so padded queries see real keys and nobody sees padded keys") {
  TokenSequence seq = random_sequence(3, 20);
  seq.attention_mask = Tensor::from_vector({1, 0.5f, 0, 0.25f, 1, 1, 0, 0, 1}, {1, 3, 3});
  PaddedSequence p = pad_for_uniform_sharding(seq, 2);
  REQUIRE(p.tokens.attention_mask.shape() == Shape{1, 4, 4});
  REQUIRE(test::max_abs_diff(p.tokens.attention_mask.narrow(1, 0, 3).narrow(2, 0, 3), seq.attention_mask) ==
          0.f);
  for (int k = 0; k < 3; ++k) REQUIRE(p.tokens.attention_mask.item({0, 3, k}) == 1.f);
  for (int q = 0; q < 4; ++q) REQUIRE(p.tokens.attention_mask.item({0, q, 3}) == 0.f);
}

TEST_CASE("sp: without padding the sequence is returned as is, and one token pads to the world size") {
  TokenSequence seq = random_sequence(8, 30);
  PaddedSequence p = pad_for_uniform_sharding(seq, 8);
  REQUIRE(p.pad == 0);
  REQUIRE(p.tokens.latent.shares_storage(seq.latent));
  REQUIRE_FALSE(p.tokens.attention_mask.defined());
  PaddedSequence one = pad_for_uniform_sharding(random_sequence(1, 40), 8);
  REQUIRE(one.tokens.num_tokens() == 8);
  REQUIRE(one.pad == 7);
}

TEST_CASE("sp: partitions are uniform, non-multiples and bad ranks are refused") {
  SequencePartition p = sequence_partition(24, 3);
  REQUIRE(p.counts == std::vector<int64_t>{8, 8, 8});
  REQUIRE(p.offsets == std::vector<int64_t>{0, 8, 16});
  REQUIRE(p.total() == 24);
  REQUIRE(
      test::contains(test::error_text([&] { sequence_partition(10, 4); }), "not divisible by world size 4"));
  REQUIRE_THROWS_AS(shard_for_rank(random_sequence(8, 50), 4, 4), Error);
}

TEST_CASE("sp: heads not divisible by the world size are refused with a clear message") {
  REQUIRE_NOTHROW(check_heads_divisible(32, 8, "attn1"));
  REQUIRE(test::contains(test::error_text([&] { check_heads_divisible(30, 4, "attn1"); }),
                         "attn1 has 30 heads, not divisible by world size 4"));
  REQUIRE_NOTHROW(check_token_budget(32768, 32768));
  REQUIRE(test::contains(test::error_text([&] { check_token_budget(32776, 32768); }), "exceed"));
}
