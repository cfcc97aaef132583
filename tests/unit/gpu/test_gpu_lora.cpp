// LoRA fusion into a weight on the GPU (pipeline/lora_fuse.h): the pair read from a host file is
// moved to the weight's device, and the fused weight is the one fused on the CPU (to one bf16 step:
// the products sum in another order).
#include "gpu_compare.h"
#include "io/lora.h"
#include "pipeline/lora_fuse.h"
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
