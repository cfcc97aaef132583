// The column budget of the CUDA convolutions (ops/conv3d.h). Not under cpu/: a setting shared by
// every build, read by kernels/conv.cu.
#include <atomic>

#include "core/error.h"
#include "ops/conv3d.h"

namespace ltx2::ops {

namespace {
std::atomic<int64_t> g_column_budget{int64_t{256} << 20};
}  // namespace

int64_t conv_column_budget() {
  return g_column_budget.load();
}

int64_t set_conv_column_budget(int64_t bytes) {
  LTX2_CHECK(bytes > 0, "conv column budget must be positive, got {}", bytes);
  return g_column_budget.exchange(bytes);
}

}  // namespace ltx2::ops
