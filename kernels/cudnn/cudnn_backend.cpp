// The shared cuDNN graph backend helpers (cudnn_backend.h).
#include "kernels/cudnn/cudnn_backend.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "core/tensor.h"

namespace ltx2::cuda {

std::string last_cudnn_error(cudnnStatus_t status) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  return fmt::format("{}: {}", cudnnGetErrorString(status), detail);
}

void throw_cudnn(const char* file, int line, const char* expr, cudnnStatus_t status) {
  throw_error(file, line, fmt::format("cuDNN error in {}: {}", expr, last_cudnn_error(status)));
}

Desc tensor_desc(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, bool is_virtual, bool by_value) {
  const int64_t alignment = 16;
  const auto rank = static_cast<int64_t>(dims.size());
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
      .set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), rank)
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), rank)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual);
  if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value);
  return std::move(t.finalize());
}

Desc pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y) {
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &compute)
      .finalize();
  Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  return std::move(op.finalize());
}

std::unique_ptr<Desc> operation_graph(cudnnHandle_t handle, const std::vector<Desc>& ops, std::string& why) {
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (const Desc& op : ops) raw_ops.push_back(op.get());
  auto graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph
      ->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw_ops.data(),
            static_cast<int64_t>(raw_ops.size()))
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
  if (cudnnStatus_t st = cudnnBackendFinalize(graph->get()); st != CUDNN_STATUS_SUCCESS) {
    why = "the operation graph does not finalize (" + last_cudnn_error(st) + ")";
    return nullptr;
  }
  return graph;
}

std::unique_ptr<Plan> finalize_plan(cudnnHandle_t handle, const Desc& graph, std::string& why,
                                    int64_t max_workspace, bool fallback_list) {
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (mode == CUDNN_HEUR_MODE_FALLBACK && !fallback_list) break;
    const char* list = mode == CUDNN_HEUR_MODE_A ? "heuristic A" : "fallback list";
    Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    if (cudnnStatus_t st = cudnnBackendFinalize(heur.get()); st != CUDNN_STATUS_SUCCESS) {
      why += fmt::format("{}{} fails ({})", why.empty() ? "" : "; ", list, last_cudnn_error(st));
      continue;
    }
    int64_t count = 0;
    LTX2_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<Desc> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(configs.back().get());
    }
    LTX2_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, raw.data()));
    std::string first_failure = "none";
    for (int64_t i = 0; i < count; ++i) {
      Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle)
          .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]);
      if (cudnnStatus_t st = cudnnBackendFinalize(plan.get()); st != CUDNN_STATUS_SUCCESS) {
        if (first_failure == "none") first_failure = last_cudnn_error(st);
        continue;
      }
      auto out = std::make_unique<Plan>();
      int64_t got = 0;
      LTX2_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                CUDNN_TYPE_INT64, 1, &got, &out->workspace));
      if (out->workspace > max_workspace) {
        if (first_failure == "none") first_failure = fmt::format("workspace {} bytes", out->workspace);
        continue;
      }
      out->plan = plan.get();
      out->keep.push_back(std::move(configs[i]));
      out->keep.push_back(std::move(plan));
      return out;
    }
    why += fmt::format("{}{}: {} configurations, none finalizes (the first failure: {})",
                       why.empty() ? "" : "; ", list, count, first_failure);
  }
  return nullptr;
}

cudnnHandle_t cudnn_handle(int device) {
  static std::mutex* mutex = new std::mutex;
  static auto* handles = new std::map<int, cudnnHandle_t>;
  std::lock_guard<std::mutex> lock(*mutex);
  cudnnHandle_t& h = (*handles)[device];
  if (!h) LTX2_CUDNN_CHECK(cudnnCreate(&h));  // on the current device, the stream left NULL
  return h;
}

cudnnStatus_t execute_plan(cudnnHandle_t handle, const Plan& plan, Device device,
                           const std::vector<int64_t>& uids, const std::vector<void*>& pointers) {
  Tensor workspace;
  if (plan.workspace > 0) workspace = Tensor::empty({plan.workspace}, DType::U8, device);
  void* workspace_ptr = plan.workspace > 0 ? workspace.data_ptr() : nullptr;
  const auto n = static_cast<int64_t>(uids.size());
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), n)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers.data(), n)
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace_ptr)
      .finalize();
  return cudnnBackendExecute(handle, plan.plan, pack.get());
}

}  // namespace ltx2::cuda
