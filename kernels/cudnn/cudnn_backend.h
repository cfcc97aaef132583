// The pieces of cuDNN's graph backend API that the cuDNN engines (attention_cudnn.cpp,
// conv_cudnn.cpp) share: error checks, an owning descriptor, tensor and pointwise nodes, the
// operation graph, the first finalizing engine configuration, one handle per device and the
// execution of a plan. Included only by kernels/cudnn/*.cpp (built with cuDNN).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"

namespace ltx2::cuda {

// The status's name and cuDNN's own words for its last failure.
std::string last_cudnn_error(cudnnStatus_t status);

[[noreturn]] void throw_cudnn(const char* file, int line, const char* expr, cudnnStatus_t status);

#define LTX2_CUDNN_CHECK(expr)                                                                \
  do {                                                                                        \
    cudnnStatus_t s_ = (expr);                                                                \
    if (s_ != CUDNN_STATUS_SUCCESS) ::ltx2::cuda::throw_cudnn(__FILE__, __LINE__, #expr, s_); \
  } while (0)

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    LTX2_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_));
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&&) = delete;
  Desc(const Desc&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  template <typename T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
            int64_t count = 1) {
    LTX2_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
    return *this;
  }
  Desc& set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t raw = other.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw);
  }
  Desc& finalize() {
    LTX2_CUDNN_CHECK(cudnnBackendFinalize(d_));
    return *this;
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// A finalized tensor descriptor of dims.size() axes, 16-byte aligned.
Desc tensor_desc(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, bool is_virtual, bool by_value = false);

// y = x <mode> b (b null for unary modes), computed in float.
Desc pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y);

// A finalized execution plan and every descriptor it was built from (kept alive with it).
struct Plan {
  std::vector<Desc> keep;
  cudnnBackendDescriptor_t plan = nullptr;  // owned by `keep`
  int64_t workspace = 0;
};

// The operation graph of `ops` on `handle`, finalized; null with `why` set when it does not
// finalize.
std::unique_ptr<Desc> operation_graph(cudnnHandle_t handle, const std::vector<Desc>& ops, std::string& why);

// The first engine configuration of the heuristic's list (mode A, then, when `fallback_list`, the
// fallback list) whose plan finalizes and needs at most `max_workspace` bytes; null when none does,
// with `why` saying what each list gave.
std::unique_ptr<Plan> finalize_plan(cudnnHandle_t handle, const Desc& graph, std::string& why,
                                    int64_t max_workspace = INT64_MAX, bool fallback_list = true);

// The process's cuDNN handle for a CUDA device, created on first use (the caller has made `device`
// current) with the legacy default stream; never destroyed: it would otherwise be released after
// the CUDA runtime.
cudnnHandle_t cudnn_handle(int device);

// Runs `plan` on the tensors of the variant pack (unique ids and data pointers), with a workspace
// of plan.workspace bytes from the caching allocator on `device` (stream-ordered, so released right
// after the launch). Returns cuDNN's status.
cudnnStatus_t execute_plan(cudnnHandle_t handle, const Plan& plan, Device device,
                           const std::vector<int64_t>& uids, const std::vector<void*>& pointers);

}  // namespace ltx2::cuda
