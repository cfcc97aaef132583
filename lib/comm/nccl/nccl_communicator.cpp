#include "comm/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/cuda/check.h"

namespace ltx2::comm {

namespace {

using Clock = std::chrono::steady_clock;

#define LTX2_NCCL_CHECK(expr)                                                                       \
  do {                                                                                              \
    ncclResult_t r_ = (expr);                                                                       \
    if (r_ != ncclSuccess && r_ != ncclInProgress)                                                  \
      throw CommError(::fmt::format("NCCL error in {}: {}", #expr, ncclGetErrorString(r_)), __FILE__, \
                      __LINE__);                                                                    \
  } while (0)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::U8: case DType::Bool: return ncclUint8;
  }
  LTX2_FAIL("NCCL: unsupported dtype");
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const DeviceCommInit& init)
      : rank_(init.rank), world_(init.world_size), device_(init.device), timeout_(init.timeout) {
    LTX2_CHECK(init.host != nullptr, "NCCL bootstrap needs the CPU communicator");
    LTX2_CUDA_CHECK(cudaSetDevice(device_.index));
    LTX2_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (rank_ == 0) LTX2_NCCL_CHECK(ncclGetUniqueId(&id));
    Tensor id_bytes = Tensor::empty({static_cast<int64_t>(sizeof(id))}, DType::U8);
    std::memcpy(id_bytes.data_ptr(), &id, sizeof(id));
    id_bytes = init.host->broadcast(id_bytes, 0);
    std::memcpy(&id, id_bytes.data_ptr(), sizeof(id));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    LTX2_NCCL_CHECK(ncclCommInitRankConfig(&comm_, world_, id, rank_, &config));
    wait_for_comm("ncclCommInitRankConfig");
  }

  ~NcclCommunicator() override {
    if (comm_) {
      if (broken_) {
        ncclCommAbort(comm_);
      } else {
        ncclCommFinalize(comm_);
        ncclCommDestroy(comm_);
      }
    }
    if (stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Device device() const override { return device_; }
  uint64_t collectives_entered() const override { return entered_; }

  Tensor all_to_all(const Tensor& send, std::span<const int64_t> send_counts,
                    std::span<const int64_t> recv_counts) override {
    enter("all_to_all");
    LTX2_CHECK(static_cast<int>(send_counts.size()) == world_ && static_cast<int>(recv_counts.size()) == world_,
               "all_to_all: {} send and {} recv counts for a world of {}", send_counts.size(),
               recv_counts.size(), world_);
    Tensor in = on_device(send);
    int64_t total_send = 0, total_recv = 0;
    for (int p = 0; p < world_; ++p) {
      total_send += send_counts[p];
      total_recv += recv_counts[p];
    }
    LTX2_CHECK(total_send == in.numel(), "all_to_all: counts add to {} but the tensor has {} elements",
               total_send, in.numel());
    Tensor out = Tensor::empty({total_recv}, in.dtype(), device_);
    size_t esize = dtype_size(in.dtype());
    auto* sp = static_cast<const char*>(in.data_ptr());
    auto* rp = static_cast<char*>(out.data_ptr());
    LTX2_NCCL_CHECK(ncclGroupStart());
    int64_t soff = 0, roff = 0;
    for (int p = 0; p < world_; ++p) {
      if (send_counts[p])
        LTX2_NCCL_CHECK(ncclSend(sp + soff * esize, send_counts[p], nccl_type(in.dtype()), p, comm_, stream_));
      if (recv_counts[p])
        LTX2_NCCL_CHECK(ncclRecv(rp + roff * esize, recv_counts[p], nccl_type(in.dtype()), p, comm_, stream_));
      soff += send_counts[p];
      roff += recv_counts[p];
    }
    LTX2_NCCL_CHECK(ncclGroupEnd());
    wait_for_stream("all_to_all");
    return out;
  }

  Tensor all_gather(const Tensor& x) override {
    enter("all_gather");
    Tensor in = on_device(x);
    Shape shape = in.shape();
    shape.insert(shape.begin(), world_);
    Tensor out = Tensor::empty(shape, in.dtype(), device_);
    LTX2_NCCL_CHECK(ncclAllGather(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in.dtype()), comm_, stream_));
    wait_for_stream("all_gather");
    return out;
  }

  Tensor all_reduce_sum(const Tensor& x) override {
    enter("all_reduce_sum");
    Tensor in = on_device(x);
    Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
    LTX2_NCCL_CHECK(
        ncclAllReduce(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in.dtype()), ncclSum, comm_, stream_));
    wait_for_stream("all_reduce_sum");
    return out;
  }

  Tensor broadcast(const Tensor& x, int root) override {
    enter("broadcast");
    LTX2_CHECK(root >= 0 && root < world_, "broadcast: root {} outside a world of {}", root, world_);
    Tensor in = on_device(x);
    Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
    LTX2_NCCL_CHECK(
        ncclBroadcast(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in.dtype()), root, comm_, stream_));
    wait_for_stream("broadcast");
    return out;
  }

  void barrier() override {
    Tensor one = Tensor::full({1}, 1.f, DType::F32, device_);
    all_reduce_sum(one);
  }

 private:
  int rank_, world_;
  Device device_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  uint64_t entered_ = 0;
  bool broken_ = false;

  void enter(const char* what) {
    LTX2_CHECK(!broken_, "{}: the NCCL communicator of rank {} is broken by an earlier error", what, rank_);
    ++entered_;
    LTX2_CUDA_CHECK(cudaSetDevice(device_.index));
    // Inputs were produced on the default stream; the collective runs on ours.
    LTX2_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }

  Tensor on_device(const Tensor& x) const { return x.to(device_).contiguous(); }

  [[noreturn]] void fail(const std::string& message, bool timed_out) {
    broken_ = true;
    if (timed_out) throw CommTimeout(message, __FILE__, __LINE__);
    throw CommError(message, __FILE__, __LINE__);
  }

  void check_async(const char* what) {
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm_, &state);
    if (state != ncclSuccess && state != ncclInProgress)
      fail(fmt::format("{} failed on rank {}: {}", what, rank_, ncclGetErrorString(state)), false);
  }

  void wait_for_comm(const char* what) {
    auto deadline = Clock::now() + timeout_;
    for (;;) {
      ncclResult_t state = ncclInProgress;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(fmt::format("{} failed on rank {}: {}", what, rank_, ncclGetErrorString(state)), false);
      if (Clock::now() > deadline)
        fail(fmt::format("{} did not complete on rank {} within {} ms", what, rank_, timeout_.count()), true);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // The watchdog: poll until the collective's work on our stream is done, NCCL reports an error, or
  // the deadline passes (then the communicator is aborted so that the kernels return).
  void wait_for_stream(const char* what) {
    wait_for_comm(what);  // the enqueue itself is asynchronous on a non-blocking communicator
    auto deadline = Clock::now() + timeout_;
    for (;;) {
      cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) fail(fmt::format("{} on rank {}: {}", what, rank_, cudaGetErrorString(q)), false);
      check_async(what);
      if (Clock::now() > deadline) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        fail(fmt::format("{} did not complete on rank {} within {} ms (a peer is gone or out of step)", what,
                         rank_, timeout_.count()),
             true);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const DeviceCommInit& init) {
  return std::make_unique<NcclCommunicator>(init);
}

}  // namespace ltx2::comm
