// LoRA files (renaming, pairing) and fusion (bf16 rule, dtype kept, skip rules, restore).
#include <cmath>

#include "core/error.h"
#include "io/lora.h"
#include "io/safetensors.h"
#include "pipeline/lora_fuse.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

// bf16(x) as a float.
float b(float x) {
  return round_bf16(x);
}

}  // namespace

TEST_CASE("lora: a file's keys are renamed and paired, alpha and lone halves are ignored") {
  REQUIRE(lora_renamed_key("diffusion_model.transformer_blocks.0.attn1.to_q.lora_A.weight") ==
          "transformer_blocks.0.attn1.to_q.lora_A.weight");
  test::ScratchDir dir("lora_file");
  write_safetensors(dir.file("l.safetensors"),
                    {{"diffusion_model.proj.lora_A.weight", test::random_tensor({2, 3}, 1).to(DType::BF16)},
                     {"diffusion_model.proj.lora_B.weight", test::random_tensor({4, 2}, 2).to(DType::BF16)},
                     {"diffusion_model.proj.alpha", Tensor::from_vector({8}, {1})},
                     {"diffusion_model.lone.lora_A.weight", test::random_tensor({2, 3}, 3)}});
  auto lora = read_lora_file(dir.file("l.safetensors"));
  REQUIRE(lora->pairs.size() == 1);
  REQUIRE(lora->pairs.count("proj.weight") == 1);
  REQUIRE(lora->pairs.at("proj.weight").down.shape() == Shape{2, 3});
  REQUIRE(lora->pairs.at("proj.weight").up.dtype() == DType::BF16);
  REQUIRE(lora->ignored_keys.size() == 2);

  write_safetensors(dir.file("bad.safetensors"),
                    {{"diffusion_model.proj.lora_A.weight", test::random_tensor({2, 3}, 1)},
                     {"diffusion_model.proj.lora_B.weight", test::random_tensor({4, 5}, 2)}});
  REQUIRE_THROWS_WITH(read_lora_file(dir.file("bad.safetensors")), Contains("'proj'"));
  write_safetensors(dir.file("none.safetensors"), {{"other", test::random_tensor({2}, 1)}});
  REQUIRE_THROWS_WITH(read_lora_file(dir.file("none.safetensors")), Contains("no LoRA pairs"));
}

TEST_CASE("lora: fusion follows the bf16 rule, keeps each weight's dtype, and restores") {
  auto make = [](uint64_t seed, int rank) {
    return std::vector<std::pair<std::string, Tensor>>{
        {"diffusion_model.a.lora_A.weight",
         test::random_tensor({rank, 3}, seed).to(DType::BF16).to(DType::F32)},
        {"diffusion_model.a.lora_B.weight",
         test::random_tensor({2, rank}, seed + 1).to(DType::BF16).to(DType::F32)},
        {"diffusion_model.b.lora_A.weight", test::random_tensor({rank, 3}, seed + 2)},
        {"diffusion_model.b.lora_B.weight", test::random_tensor({2, rank}, seed + 3)},
        {"diffusion_model.absent.lora_A.weight", test::random_tensor({rank, 3}, seed + 4)},
        {"diffusion_model.absent.lora_B.weight", test::random_tensor({2, rank}, seed + 5)}};
  };
  auto l1 = std::make_shared<const LoraWeights>(lora_from_tensors(make(10, 2), "l1"));
  auto l2 = std::make_shared<const LoraWeights>(lora_from_tensors(make(20, 1), "l2"));
  pipeline::WeightMap weights = {{"a.weight", test::random_tensor({2, 3}, 1).to(DType::BF16)},
                                 {"b.weight", test::random_tensor({2, 3}, 2)},
                                 {"c.weight", test::random_tensor({2, 3}, 3)}};
  const pipeline::WeightMap original = weights;
  pipeline::LoraFusion fusion;
  const auto affected = fusion.apply(weights, {{l1, 0.7f}, {l2, -0.3f}, {l1, 0.0f}});
  REQUIRE(affected == std::vector<std::string>{"a.weight", "b.weight"});
  REQUIRE(fusion.active());
  REQUIRE(weights.at("a.weight").dtype() == DType::BF16);
  REQUIRE(weights.at("b.weight").dtype() == DType::F32);
  REQUIRE(weights.at("c.weight").shares_storage(original.at("c.weight")));

  for (const char* key : {"a.weight", "b.weight"}) {
    const LoraPair& p1 = l1->pairs.at(key);
    const LoraPair& p2 = l2->pairs.at(key);
    const Tensor w = original.at(key).to(DType::F32);
    for (int o = 0; o < 2; ++o)
      for (int i = 0; i < 3; ++i) {
        float d = 0, d2 = 0;
        for (int k = 0; k < 2; ++k) d += b(b(p1.up.item({o, k})) * 0.7f) * b(p1.down.item({k, i}));
        d2 = b(p2.up.item({o, 0})) * b(p2.down.item({0, i}));
        const float expected = b(b(b(d) + -0.3f * d2) + w.item({o, i}));
        REQUIRE(weights.at(key).to(DType::F32).item({o, i}) == expected);
      }
  }
  fusion.restore(weights);
  REQUIRE_FALSE(fusion.active());
  for (const auto& [key, t] : original) REQUIRE(weights.at(key).shares_storage(t));

  pipeline::WeightMap wrong = {{"a.weight", test::random_tensor({5, 3}, 1)}};
  REQUIRE_THROWS_WITH(fusion.apply(wrong, {{l1, 1.0f}}), Contains("'a.weight'"));
  REQUIRE_FALSE(fusion.active());
}
