// cuDNN's forward convolution through the cuDNN graph backend API: one
// OPERATION_CONVOLUTION_FORWARD node (cross-correlation, float compute, pre/post paddings, strides,
// dilations) on NCDHW bf16 tensors, with the bias as a pointwise add of a [1, Cout, 1, 1, 1] tensor
// fused behind it (conv -> virtual float tensor -> add -> y). When no engine takes the fused graph
// the convolution runs alone and the caller adds the bias after.
// Plans (the first configuration of heuristic A, then for the unfused graph the fallback list, that
// finalizes with at most kMaxWorkspace bytes of workspace) are cached per (device, shapes, window, bias);
// shapes cuDNN has no engine for are cached too, each logged once. The workspace comes from the caching
// allocator (cudnn_backend.h).
#include "kernels/cudnn/conv_cudnn.h"

#include <fmt/ranges.h>

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda/check.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/cudnn/cudnn_backend.h"

namespace ltx2::cuda {

namespace {

constexpr int64_t kMaxWorkspace = int64_t{2} << 30;

// The tensor unique ids of the variant pack, then the fused graph's virtual tensor.
enum Uid : int64_t { kX = 1, kW, kY, kBias, kConvOut };

struct ConvPlan {
  Plan plan;
  bool bias_fused = false;
};

Desc convolution(const CudnnConvWindow& window) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 3;
  Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial)
      .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, window.dilation.data(), spatial)
      .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, window.stride.data(), spatial)
      .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, window.pre.data(), spatial)
      .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, window.post.data(), spatial);
  return std::move(conv.finalize());
}

Desc convolution_forward(const Desc& conv, const Desc& x, const Desc& w, const Desc& y) {
  const float alpha = 1.f, beta = 0.f;
  Desc op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &alpha)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &beta)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
  return std::move(op.finalize());
}

// The convolution graph for these shapes (with the bias add when `fuse_bias`), or null with `why`.
std::unique_ptr<ConvPlan> build_plan(cudnnHandle_t handle, const Tensor& x, const Tensor& w,
                                     const std::vector<int64_t>& y_dims, const CudnnConvWindow& window,
                                     bool fuse_bias, std::string& why) {
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16;
  std::vector<Desc> d;
  d.push_back(tensor_desc(kX, bf16, x.shape(), contiguous_strides(x.shape()), false));
  d.push_back(tensor_desc(kW, bf16, w.shape(), contiguous_strides(w.shape()), false));
  d.push_back(tensor_desc(kY, bf16, y_dims, contiguous_strides(y_dims), false));
  d.push_back(convolution(window));
  std::vector<Desc> ops;
  if (fuse_bias) {
    const std::vector<int64_t> bias_dims{1, w.size(0), 1, 1, 1};
    d.push_back(tensor_desc(kBias, bf16, bias_dims, contiguous_strides(bias_dims), false));
    d.push_back(tensor_desc(kConvOut, CUDNN_DATA_FLOAT, y_dims, contiguous_strides(y_dims), true));
    ops.push_back(convolution_forward(d[3], d[0], d[1], d[5]));
    ops.push_back(pointwise(CUDNN_POINTWISE_ADD, d[5], &d[4], d[2]));
  } else {
    ops.push_back(convolution_forward(d[3], d[0], d[1], d[2]));
  }
  std::unique_ptr<Desc> graph = operation_graph(handle, ops, why);
  if (!graph) return nullptr;
  // A fused graph only from heuristic A: the fallback list's fused engines can be slower than the
  // convolution alone plus a bias pass.
  std::unique_ptr<Plan> plan = finalize_plan(handle, *graph, why, kMaxWorkspace, !fuse_bias);
  if (!plan) return nullptr;
  auto out = std::make_unique<ConvPlan>();
  out->bias_fused = fuse_bias;
  out->plan = std::move(*plan);
  for (Desc& op : ops) out->plan.keep.push_back(std::move(op));
  out->plan.keep.push_back(std::move(*graph));
  for (Desc& desc : d) out->plan.keep.push_back(std::move(desc));
  return out;
}

// Plan key: device, bias, x's and w's shapes, then the window.
using PlanKey = std::array<int64_t, 24>;

PlanKey plan_key(const Tensor& x, const Tensor& w, bool bias, const CudnnConvWindow& window) {
  PlanKey key{x.device().index, bias ? 1 : 0};
  int i = 2;
  for (int a = 0; a < 5; ++a) key[i++] = x.size(a);
  for (int a = 0; a < 5; ++a) key[i++] = w.size(a);
  for (const auto* v : {&window.pre, &window.post, &window.stride, &window.dilation})
    for (int64_t e : *v) key[i++] = e;
  return key;
}

bool aligned(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// The operands the graph describes (see the header); why not, otherwise.
bool operands_supported(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                        std::string& why) {
  std::vector<const Tensor*> all{&y, &x, &w};
  if (bias.defined()) all.push_back(&bias);
  if (x.dim() != 5 || w.dim() != 5 || y.dim() != 5 || x.size(1) != w.size(1) || y.size(0) != x.size(0) ||
      y.size(1) != w.size(0) || (bias.defined() && bias.numel() != w.size(0))) {
    why = "not a groups-1 conv3d";
    return false;
  }
  for (const Tensor* t : all) {
    if (t->dtype() != DType::BF16)
      why = "operands must all be bf16";
    else if (!t->device().is_cuda() || t->device() != x.device())
      why = "operands not on one GPU";
    else if (!t->is_contiguous())
      why = "operands not contiguous";
    else if (!aligned(*t))
      why = "operands not 16-byte aligned";
    if (!why.empty()) return false;
  }
  return true;
}

struct Engine {
  std::mutex mutex;
  std::map<PlanKey, std::shared_ptr<const ConvPlan>> plans;  // null: cuDNN does not run the key
  std::atomic<int64_t> runs{0};
};

// Never destroyed: the plans would otherwise be released after the CUDA runtime.
Engine& engine() {
  static Engine* e = new Engine;
  return *e;
}

std::string describe(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                     const CudnnConvWindow& window) {
  return fmt::format("{} x {} w {}{} pad {}/{} stride {} dilation {} on {}", op, x.str(), w.str(),
                     bias.defined() ? " +bias" : "", fmt::join(window.pre, ","), fmt::join(window.post, ","),
                     fmt::join(window.stride, ","), fmt::join(window.dilation, ","), x.device().str());
}

// The cached plan of the key, built (and its outcome logged) on first use; null when cuDNN cannot.
std::shared_ptr<const ConvPlan> plan_for(Engine& e, cudnnHandle_t handle, const PlanKey& key, const Tensor& x,
                                         const Tensor& w, const Tensor& bias,
                                         const std::vector<int64_t>& y_dims, const CudnnConvWindow& window,
                                         const char* op) {
  std::lock_guard<std::mutex> lock(e.mutex);
  auto found = e.plans.find(key);
  if (found != e.plans.end()) return found->second;
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<ConvPlan> built;
  std::string why;
  try {
    if (bias.defined()) built = build_plan(handle, x, w, y_dims, window, true, why);
    if (!built) {
      std::string unfused_why;
      built = build_plan(handle, x, w, y_dims, window, false, unfused_why);
      why += (why.empty() ? "" : "; without the bias: ") + unfused_why;
    }
  } catch (const Error& err) {
    why = err.what();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (built) {
    log_info("{}: cuDNN ({}, plan {:.0f} ms, workspace {} bytes)", describe(op, x, w, bias, window),
             !bias.defined()     ? "no bias"
             : built->bias_fused ? "bias fused"
                                 : "bias added after",
             ms, built->plan.workspace);
  } else {
    log_info("{}: implicit GEMM, cuDNN has no engine ({})", describe(op, x, w, bias, window), why);
  }
  return e.plans.emplace(key, std::move(built)).first->second;
}

}  // namespace

CudnnConv cudnn_conv3d(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                       const CudnnConvWindow& window, const char* op) {
  std::string unsupported;
  if (!operands_supported(y, x, w, bias, unsupported)) {
    log_debug("{} x {} w {}: implicit GEMM ({})", op, x.str(), w.str(), unsupported);
    return CudnnConv::NotRun;
  }
  for (int a = 0; a < 3; ++a) {
    const int64_t span =
        x.size(2 + a) + window.pre[a] + window.post[a] - window.dilation[a] * (w.size(2 + a) - 1) - 1;
    LTX2_CHECK(span >= 0 && y.size(2 + a) == span / window.stride[a] + 1,
               "{}: output {} does not match the window of input {} and weight {} on axis {}", op, y.str(),
               x.str(), w.str(), a);
  }
  LTX2_CUDA_CHECK(cudaSetDevice(x.device().index));
  Engine& e = engine();
  const cudnnHandle_t handle = cudnn_handle(x.device().index);
  const PlanKey key = plan_key(x, w, bias.defined(), window);
  std::shared_ptr<const ConvPlan> plan = plan_for(e, handle, key, x, w, bias, y.shape(), window, op);
  if (!plan) return CudnnConv::NotRun;

  std::vector<int64_t> uids{kX, kW, kY};
  std::vector<void*> pointers{x.data_ptr(), w.data_ptr(), y.data_ptr()};
  if (plan->bias_fused) {
    uids.push_back(kBias);
    pointers.push_back(bias.data_ptr());
  }
  if (cudnnStatus_t st = execute_plan(handle, plan->plan, x.device(), uids, pointers);
      st != CUDNN_STATUS_SUCCESS) {
    // Refused at launch (nothing ran): the implicit GEMM takes this shape from now on.
    log_info("{}: implicit GEMM, cuDNN refused to run its plan ({})", describe(op, x, w, bias, window),
             last_cudnn_error(st));
    std::lock_guard<std::mutex> lock(e.mutex);
    e.plans[key] = nullptr;
    return CudnnConv::NotRun;
  }
  ++e.runs;
  return bias.defined() && !plan->bias_fused ? CudnnConv::BiasLeft : CudnnConv::Done;
}

int64_t cudnn_conv_runs() {
  return engine().runs.load();
}

}  // namespace ltx2::cuda
