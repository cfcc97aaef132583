#include "core/device.h"

#include "core/cuda/events.h"
#include "core/cuda/memory.h"
#include "core/error.h"
#include "core/op_profile.h"

namespace ltx2 {

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0) {
    std::string n = s.substr(5);
    LTX2_CHECK(!n.empty() && n.find_first_not_of("0123456789") == std::string::npos && n.size() < 4,
               "bad device '{}' (use cpu, cuda or cuda:N)", s);
    return cuda(std::stoi(n));
  }
  LTX2_FAIL("bad device '{}' (use cpu, cuda or cuda:N)", s);
}

#ifdef LTX2_WITH_CUDA
bool cuda_built() {
  return true;
}
#else
bool cuda_built() {
  return false;
}

namespace {
[[noreturn]] void no_cuda() {
  LTX2_FAIL("this ltx2 was built without the CUDA backend");
}
}  // namespace

void* cuda_alloc(size_t, int) {
  no_cuda();
}
void cuda_free(void*, int) {}
void cuda_memset_zero(void*, size_t, int) {
  no_cuda();
}
void cuda_memcpy(void*, Device, const void*, Device, size_t) {
  no_cuda();
}
void cuda_copy_strided(const Tensor&, const Tensor&) {
  no_cuda();
}
void cuda_copy_scaled(const Tensor&, const Tensor&, float) {
  no_cuda();
}
CudaMemoryStats cuda_memory_stats(int) {
  return {};
}
void cuda_reset_peak_memory(int) {}
void cuda_empty_cache() {}
void cuda_set_memory_limit(int, size_t) {
  no_cuda();
}
CudaDeviceMemory cuda_device_memory(int) {
  no_cuda();
}
int cuda_compute_capability(int) {
  no_cuda();
}
void cuda_upload_from_file(int, uint64_t, size_t, void*, int, const char*) {
  no_cuda();
}
void cuda_synchronize(int) {
  no_cuda();
}
std::vector<float> cuda_time_each(int, int, const std::function<void()>&) {
  no_cuda();
}

struct OpProfile::State {};
OpProfile::OpProfile(int) {
  no_cuda();
}
OpProfile::~OpProfile() = default;
std::vector<OpProfile::Entry> OpProfile::finish() {
  no_cuda();
}
OpProfile::State* active_op_profile() {
  return nullptr;
}
void op_profile_begin(OpProfile::State*, const char*) {}
void op_profile_end(OpProfile::State*) {}
#endif

}  // namespace ltx2
