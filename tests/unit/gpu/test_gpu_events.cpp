// Device event timing (core/cuda/events.h): one positive time per run, and longer work takes
// longer; the op profile built on events.
#include <map>

#include "core/cuda/events.h"
#include "core/op_profile.h"
#include "gpu_compare.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
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

// The op profile (core/op_profile.h): the ops a forward issues, each counted once under its table
// name, copies under their own names, nested ops under the outer one, nothing after finish().
TEST_CASE("gpu: an op profile counts each op kind once, nested ops for the outer one") {
  Tensor a = test::to_gpu(test::random_tensor({256, 512}, 3), DType::BF16);
  Tensor w = test::to_gpu(test::random_tensor({384, 512}, 4), DType::BF16);
  // Head dim 32 takes the composed attention path, itself built from matmul, softmax and binary ops.
  Tensor q = test::to_gpu(test::random_tensor({1, 2, 64, 32}, 5), DType::BF16);
  cuda_synchronize(0);
  std::vector<OpProfile::Entry> entries;
  {
    OpProfile profile(0);
    REQUIRE_THROWS_WITH(OpProfile(0), Catch::Matchers::Contains("already recording"));
    for (int i = 0; i < 3; ++i) ops::linear(a, w, Tensor());
    ops::add(a, a);
    a.transpose(0, 1).contiguous();
    ops::attention(q, q, q);
    entries = profile.finish();
    ops::add(a, a);  // after finish(): not recorded
  }
  std::map<std::string, OpProfile::Entry> by_op;
  for (const auto& e : entries) {
    REQUIRE(e.ms > 0);
    by_op[e.op] = e;
  }
  REQUIRE(by_op.size() == 4);
  REQUIRE(by_op.at("linear").calls == 3);
  REQUIRE(by_op.at("binary").calls == 1);
  REQUIRE(by_op.at("copy (strided or converting)").calls == 1);
  REQUIRE(by_op.at("attention").calls == 1);
  for (size_t i = 1; i < entries.size(); ++i) REQUIRE(entries[i - 1].ms >= entries[i].ms);
  OpProfile again(0);  // the first one is gone, so another may record
  REQUIRE(again.finish().empty());
}

TEST_CASE("gpu: a GPU tensor's typed host pointer is refused, naming the tensor") {
  Tensor t = test::to_gpu(test::random_tensor({4, 4}, 1), DType::F32);
  REQUIRE_THROWS_WITH(t.data<float>(), Catch::Matchers::Contains("read as host memory"));
  REQUIRE(t.data_ptr() != nullptr);  // the untyped device pointer stays available to kernels
}
