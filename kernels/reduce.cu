// CUDA reductions over one dimension (sum, mean, max, min): the reduced dimension is moved last
// and made contiguous, then one block reduces each row in float32. Output in the input's dtype.
#include "kernels/common.cuh"
#include "ops/reduce.h"

namespace ltx2::cuda {

namespace {

template <typename T>
__global__ void reduce_kernel(T* out, const T* x, int64_t L, int op) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * L;
  bool is_sum = op == int(ops::ReduceOp::Sum) || op == int(ops::ReduceOp::Mean);
  bool is_max = op == int(ops::ReduceOp::Max);
  float acc = is_sum ? 0.f : is_max ? -INFINITY : INFINITY;
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) {
    float v = to_f(row[i]);
    acc = is_sum ? acc + v : is_max ? fmaxf(acc, v) : fminf(acc, v);
  }
  if (is_sum) {
    acc = block_reduce(
        acc, scratch, [](float v) { return warp_sum(v); }, 0.f);
    if (op == int(ops::ReduceOp::Mean)) acc /= static_cast<float>(L);
  } else if (is_max) {
    acc = block_reduce(
        acc, scratch, [](float v) { return warp_max(v); }, -INFINITY);
  } else {
    acc = block_reduce(
        acc, scratch, [](float v) { return warp_min(v); }, INFINITY);
  }
  if (threadIdx.x == 0) out[blockIdx.x] = from_f<T>(acc);
}

}  // namespace

Tensor reduce(const Tensor& x, int dim, bool keepdim, int op) {
  int d = dim < 0 ? dim + x.dim() : dim;
  LTX2_CHECK(d >= 0 && d < x.dim(), "reduce: dimension {} of {}", dim, x.str());
  use_device(x);
  std::vector<int> order;
  for (int i = 0; i < x.dim(); ++i)
    if (i != d) order.push_back(i);
  order.push_back(d);
  Tensor xc = x.permute(order).contiguous();
  Shape out_shape = x.shape();
  if (keepdim)
    out_shape[d] = 1;
  else
    out_shape.erase(out_shape.begin() + d);
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  int64_t L = x.size(d), rows = out.numel();
  if (rows == 0) return out;
  dispatch_float(x.dtype(), "reduce", [&](auto t) {
    using T = decltype(t);
    reduce_kernel<T><<<static_cast<unsigned>(rows), L >= 1024 ? 512 : 128>>>(
        static_cast<T*>(out.data_ptr()), static_cast<const T*>(xc.data_ptr()), L, op);
    check_launch();
  });
  return out;
}

}  // namespace ltx2::cuda
