// LoRA fusion into a weight on the GPU (pipeline/lora_fuse.h): the pair read from a host file is
// moved to the weight's device, and the fused weight is the one fused on the CPU (to one bf16 step:
// the products sum in another order); fp8-cast's stochastic rounding on the GPU.
#include <cmath>
#include <vector>

#include "gpu_compare.h"
#include "io/lora.h"
#include "models/transformer/weights.h"
#include "ops/stochastic_round.h"
#include "pipeline/lora_fuse.h"
#include "pipeline/transformer_loras.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("gpu: a LoRA fuses into a GPU weight as into the same weight on the CPU") {
  LoraPair pair;
  pair.down = test::random_tensor({4, 24}, 1);  // lora_A [rank, in]
  pair.up = test::random_tensor({16, 4}, 2);    // lora_B [out, rank]
  const Tensor weight = test::random_tensor({16, 24}, 3).to(DType::BF16);
  const std::vector<std::pair<const LoraPair*, float>> contributions = {{&pair, 0.7f}, {&pair, -0.2f}};
  const Tensor cpu = pipeline::fuse_lora_weight(weight, contributions, "w");
  const Tensor gpu = pipeline::fuse_lora_weight(weight.to(test::gpu()), contributions, "w");
  REQUIRE(gpu.device() == test::gpu());
  REQUIRE(gpu.dtype() == DType::BF16);
  REQUIRE(test::max_error(test::to_host_f32(gpu), cpu.to(DType::F32)) <= 0.02);  // bf16 step at 2: 0.0156
}

// fp8-scaled-mm's rule on the GPU: the same re-quantized weight and scale as on the CPU, up to a
// code where the matmul's accumulation order moves a value across an e4m3 rounding boundary.
TEST_CASE("gpu: a LoRA fuses into an FP8-held GPU weight as on the CPU (fp8-scaled-mm rule)") {
  LoraPair pair;
  pair.down = test::random_tensor({4, 32}, 1);
  pair.up = test::random_tensor({16, 4}, 2);
  const Tensor weight = test::random_tensor({16, 32}, 3).to(DType::F8E4M3), scale = Tensor::scalar(0.25f);
  const pipeline::LoraContributions contributions = {{&pair, 0.7f}};
  const pipeline::Fp8Fused cpu = pipeline::fuse_lora_fp8_weight(weight, scale, contributions, "w");
  const pipeline::Fp8Fused gpu =
      pipeline::fuse_lora_fp8_weight(weight.to(test::gpu()), scale.to(test::gpu()), contributions, "w");
  REQUIRE(gpu.weight.device() == test::gpu());
  REQUIRE(gpu.weight.dtype() == DType::F8E4M3);
  const float cpu_scale = cpu.scale.item(), gpu_scale = gpu.scale.to(Device::cpu()).item();
  REQUIRE(std::fabs(gpu_scale - cpu_scale) <= 1e-6f * cpu_scale);
  const Tensor a = test::to_host_f32(gpu.weight.to(Device::cpu()).to_scaled(DType::F32, gpu_scale));
  const Tensor b = cpu.weight.to_scaled(DType::F32, cpu_scale);
  // At most one e4m3 step where a value differs (32 at the top of the range, times the scale), and
  // few codes differ at all.
  REQUIRE(test::max_error(a, b) <= 32.f * cpu_scale);
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  int differing = 0;
  for (size_t i = 0; i < va.size(); ++i) differing += va[i] != vb[i];
  REQUIRE(differing <= 8);  // of 512
}

// fp8-cast's rule on the GPU is the reference's CUDA one: its stochastic rounding kernel with seed 0
// (ops::fp8_cast_fuse_stochastic, whose CPU loop the golden case fp8_cast_stochastic_fuse pins to
// the reference's kernel), so the fused weight on the GPU has the CPU loop's bits given the same
// delta, and differs from the CPU pipeline's round-to-nearest in some values; restore gives back the
// clean weight.
TEST_CASE("gpu: with fp8-cast a LoRA fuses into a GPU weight by the reference's stochastic rounding") {
  models::transformer::TransformerWeights w;
  w.blocks.resize(1);
  const Tensor clean = test::random_tensor({64, 48}, 9).to(DType::F8E4M3).to(DType::BF16).to(test::gpu());
  w.blocks[0].video_self.to_q.weight = clean;
  pipeline::TransformerLoras loras(std::move(w), Quantization::Fp8Cast);
  auto lora = std::make_shared<LoraWeights>(lora_from_tensors(
      {{"diffusion_model.transformer_blocks.0.attn1.to_q.lora_A.weight", test::random_tensor({2, 48}, 11)},
       {"diffusion_model.transformer_blocks.0.attn1.to_q.lora_B.weight", test::random_tensor({64, 2}, 12)}},
      "test"));
  loras.fuse({{lora, 0.5f}});
  const Tensor fused = loras.weights().blocks[0].video_self.to_q.weight;
  REQUIRE(fused.device() == test::gpu());
  REQUIRE(fused.dtype() == DType::BF16);
  // The same delta on the CPU (the delta's matmul order can differ by a bf16 step, so the delta is
  // formed once, on the GPU, and handed to both).
  const LoraPair& pair = lora->pairs.at("transformer_blocks.0.attn1.to_q.weight");
  const Tensor delta = pipeline::lora_delta(clean, {{&pair, 0.5f}}, "to_q").to(DType::BF16).to(Device::cpu());
  const Tensor weight8 = clean.to(Device::cpu()).to(DType::F8E4M3);
  const Tensor want = ops::fp8_cast_fuse_stochastic(weight8, delta, 0).to(DType::F8E4M3).to(DType::F32);
  REQUIRE(test::max_error(test::to_host_f32(fused), want) == 0.0);
  const Tensor nearest = models::transformer::round_to_f8e4m3(
      pipeline::fuse_bf16(clean.to(Device::cpu()), delta.to(DType::F32)));
  REQUIRE(test::max_error(want, nearest.to(DType::F32)) > 0.0);
  loras.restore();
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight.shares_storage(clean));
}
