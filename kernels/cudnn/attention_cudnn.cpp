// cuDNN's fused flash attention (scaled dot-product attention forward: bf16 in and out, float32
// scores and softmax, no dropout, no statistics output) through the cuDNN graph backend API. The
// operation graph is the pattern cuDNN fuses into one flash-attention kernel:
//   S = Q·Kᵀ (matmul, float) -> S·scale (pointwise, the scale a by-value scalar) -> softmax as
//   max (reduction) / sub / exp / sum (reduction) / div, P in bf16 -> O = P·V (matmul, bf16)
// plus the softmax statistics max + log(sum) as a virtual tensor nobody reads: cuDNN 9.14 tags
// the graph as attention only with that branch present (without it the heuristics offer engines
// and every one refuses the graph: "Dropout set of ops not configured correctly").
// Kᵀ is K's own memory described as [B, H, D, Tk] with its last two strides swapped, so q, k, v and
// the output are read and written in place through their strides. Building a graph and finalizing
// a plan takes milliseconds to seconds, so plans are cached per (device, shape, strides); shapes
// cuDNN has no engine for are cached too. One cuDNN handle per device on the legacy default stream
// (its NULL stream); the workspace is a tensor from the caching allocator, which is stream-ordered,
// so releasing it right after the launch is safe.
#include "kernels/cudnn/attention_cudnn.h"

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda/check.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/cudnn/cudnn_backend.h"

namespace ltx2::cuda {

namespace {

using Dims = std::array<int64_t, 4>;

// The tensor unique ids of the variant pack, then the graph's virtual tensors.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kScale,
  kScores,
  kScaled,
  kRowMax,
  kCentered,
  kExp,
  kRowSum,
  kLogSum,
  kStats,
  kProbs
};

Desc tensor(int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides, bool is_virtual,
            bool by_value = false) {
  return tensor_desc(uid, type, {dims.begin(), dims.end()}, {strides.begin(), strides.end()}, is_virtual,
                     by_value);
}

Desc matmul(const Desc& a, const Desc& b, const Desc& c) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  Desc mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute).finalize();
  Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  return std::move(op.finalize());
}

Desc reduction(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  Desc red(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  red.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode)
      .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute)
      .finalize();
  Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
      .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
  return std::move(op.finalize());
}

Dims strides_of(const Tensor& t) {
  return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// The attention graph for these operands (their shapes and strides; the data pointers come with
// each call), or null when cuDNN cannot fuse it.
std::unique_ptr<Plan> build_plan(cudnnHandle_t handle, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& out, std::string& why) {
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), Tk = k.size(2);
  const Dims kq = strides_of(k);
  std::vector<Desc> d;
  d.push_back(tensor(kQ, CUDNN_DATA_BFLOAT16, {B, H, Tq, D}, strides_of(q), false));
  d.push_back(tensor(kK, CUDNN_DATA_BFLOAT16, {B, H, D, Tk}, {kq[0], kq[1], kq[3], kq[2]}, false));  // Kᵀ
  d.push_back(tensor(kV, CUDNN_DATA_BFLOAT16, {B, H, Tk, D}, strides_of(v), false));
  d.push_back(tensor(kO, CUDNN_DATA_BFLOAT16, {B, H, Tq, D}, strides_of(out), false));
  d.push_back(tensor(kScale, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true));
  const Dims scores{B, H, Tq, Tk}, scores_strides{H * Tq * Tk, Tq * Tk, Tk, 1};
  const Dims rows{B, H, Tq, 1}, rows_strides{H * Tq, Tq, 1, 1};
  d.push_back(tensor(kScores, CUDNN_DATA_FLOAT, scores, scores_strides, true));
  d.push_back(tensor(kScaled, CUDNN_DATA_FLOAT, scores, scores_strides, true));
  d.push_back(tensor(kRowMax, CUDNN_DATA_FLOAT, rows, rows_strides, true));
  d.push_back(tensor(kCentered, CUDNN_DATA_FLOAT, scores, scores_strides, true));
  d.push_back(tensor(kExp, CUDNN_DATA_FLOAT, scores, scores_strides, true));
  d.push_back(tensor(kRowSum, CUDNN_DATA_FLOAT, rows, rows_strides, true));
  d.push_back(tensor(kLogSum, CUDNN_DATA_FLOAT, rows, rows_strides, true));
  d.push_back(tensor(kStats, CUDNN_DATA_FLOAT, rows, rows_strides, true));
  d.push_back(tensor(kProbs, CUDNN_DATA_BFLOAT16, scores, scores_strides, true));  // P·V takes bf16 P
  auto t = [&d](Uid uid) -> const Desc& { return d[uid - 1]; };

  std::vector<Desc> ops;
  ops.push_back(matmul(t(kQ), t(kK), t(kScores)));
  ops.push_back(pointwise(CUDNN_POINTWISE_MUL, t(kScores), &t(kScale), t(kScaled)));
  ops.push_back(reduction(CUDNN_REDUCE_TENSOR_MAX, t(kScaled), t(kRowMax)));
  ops.push_back(pointwise(CUDNN_POINTWISE_SUB, t(kScaled), &t(kRowMax), t(kCentered)));
  ops.push_back(pointwise(CUDNN_POINTWISE_EXP, t(kCentered), nullptr, t(kExp)));
  ops.push_back(reduction(CUDNN_REDUCE_TENSOR_ADD, t(kExp), t(kRowSum)));
  ops.push_back(pointwise(CUDNN_POINTWISE_LOG, t(kRowSum), nullptr, t(kLogSum)));
  ops.push_back(pointwise(CUDNN_POINTWISE_ADD, t(kRowMax), &t(kLogSum), t(kStats)));
  ops.push_back(pointwise(CUDNN_POINTWISE_DIV, t(kExp), &t(kRowSum), t(kProbs)));
  ops.push_back(matmul(t(kProbs), t(kV), t(kO)));

  std::unique_ptr<Desc> graph = operation_graph(handle, ops, why);
  if (!graph) return nullptr;
  std::unique_ptr<Plan> plan = finalize_plan(handle, *graph, why);
  if (!plan) return nullptr;
  for (Desc& op : ops) d.push_back(std::move(op));
  d.push_back(std::move(*graph));
  for (Desc& desc : d) plan->keep.push_back(std::move(desc));
  return plan;
}

// Plan key: device, B, H, Tq, Tk, D, then the strides of q, k, v and out.
using PlanKey = std::array<int64_t, 22>;

PlanKey plan_key(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out) {
  PlanKey key{q.device().index, q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  int i = 6;
  for (const Tensor* t : {&q, &k, &v, &out})
    for (int d = 0; d < 4; ++d) key[i++] = t->stride(d);
  return key;
}

// Inputs the graph above describes: bf16, head dims 64/128 (Dv == D), as many KV heads as query
// heads, 16-byte rows and addresses.
bool layout_supported(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out) {
  const int64_t D = q.size(3);
  if (D != 64 && D != 128) return false;
  if (k.size(1) != q.size(1) || v.size(1) != q.size(1)) return false;
  if (k.size(3) != D || v.size(3) != D || out.size(3) != D || k.size(2) != v.size(2)) return false;
  for (const Tensor* t : {&q, &k, &v, &out}) {
    if (t->dim() != 4 || t->dtype() != DType::BF16 || !t->device().is_cuda() || t->device() != q.device() ||
        t->numel() == 0 || t->stride(3) != 1 || reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0)
      return false;
    for (int d = 0; d < 3; ++d)
      if (t->stride(d) % 8 != 0) return false;
  }
  return true;
}

struct Engine {
  std::mutex mutex;
  std::map<PlanKey, std::unique_ptr<Plan>> plans;  // null: cuDNN has no engine for the key
};

// Never destroyed: the plans would otherwise be released after the CUDA runtime.
Engine& engine() {
  static Engine* e = new Engine;
  return *e;
}

}  // namespace

bool cudnn_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale) {
  if (!layout_supported(q, k, v, out)) return false;
  LTX2_CUDA_CHECK(cudaSetDevice(q.device().index));
  Engine& e = engine();
  const PlanKey key = plan_key(q, k, v, out);
  const Plan* plan = nullptr;
  cudnnHandle_t handle = cudnn_handle(q.device().index);
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    auto found = e.plans.find(key);
    if (found == e.plans.end()) {
      const auto start = std::chrono::steady_clock::now();
      std::unique_ptr<Plan> built;
      std::string why;
      try {
        built = build_plan(handle, q, k, v, out, why);
      } catch (const Error& err) {
        why = err.what();
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      const std::string shape =
          fmt::format("q {} k {} v {} on {}", q.str(), k.str(), v.str(), q.device().str());
      if (built) {
        log_debug("cuDNN attention plan for {}: {:.0f} ms, workspace {} bytes", shape, ms, built->workspace);
      } else {
        log_info("cuDNN attention cannot run {} ({}); the wgmma kernel takes it", shape, why);
      }
      found = e.plans.emplace(key, std::move(built)).first;
    }
    plan = found->second.get();
  }
  if (!plan) return false;

  LTX2_CUDNN_CHECK(execute_plan(handle, *plan, q.device(), {kQ, kK, kV, kO, kScale},
                                {q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), &scale}));
  return true;
}

}  // namespace ltx2::cuda
