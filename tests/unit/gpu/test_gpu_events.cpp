// Device event timing (core/cuda/events.h): one positive time per run, and longer work takes
// longer.
#include "core/cuda/events.h"
#include "gpu_compare.h"
#include "ops/linear.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("gpu: event timing returns one time per run, growing with the work") {
  Tensor small = test::to_gpu(test::random_tensor({128, 128}, 1), DType::BF16);
  Tensor large = test::to_gpu(test::random_tensor({2048, 2048}, 2), DType::BF16);
  cuda_synchronize(0);
  std::vector<float> t_small = cuda_time_each(0, 5, [&] { ops::matmul(small, small); });
  std::vector<float> t_large = cuda_time_each(0, 5, [&] {
    for (int i = 0; i < 4; ++i) ops::matmul(large, large);
  });
  REQUIRE(t_small.size() == 5);
  for (float ms : t_small) REQUIRE(ms > 0.f);
  REQUIRE(t_large[4] > t_small[4]);
}
