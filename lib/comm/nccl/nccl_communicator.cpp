#include "comm/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cuda/check.h"

namespace ltx2::comm {

namespace {

using Clock = std::chrono::steady_clock;

#define LTX2_NCCL_CHECK(expr)                                                                         \
  do {                                                                                                \
    ncclResult_t r_ = (expr);                                                                         \
    if (r_ != ncclSuccess && r_ != ncclInProgress)                                                    \
      throw CommError(::fmt::format("NCCL error in {}: {}", #expr, ncclGetErrorString(r_)), __FILE__, \
                      __LINE__);                                                                      \
  } while (0)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::U8:
    case DType::Bool: return ncclUint8;
    case DType::F8E4M3:
    case DType::F8E5M2: break;  // no collective moves FP8 weights or activations yet
  }
  LTX2_FAIL("NCCL: unsupported dtype {}", dtype_name(t));
}

// What a rank states before each collective: op, dtype, elements, root, then for all_to_all its
// send and receive counts (world_size each).
enum class Op : int64_t { AllToAll = 1, AllGather, AllReduceSum, Broadcast };
constexpr int64_t kStatementFields = 4;
// Collectives a rank may have issued and not yet seen complete.
constexpr size_t kMaxInFlight = 32;

const char* op_name(Op op) {
  switch (op) {
    case Op::AllToAll: return "all_to_all";
    case Op::AllGather: return "all_gather";
    case Op::AllReduceSum: return "all_reduce_sum";
    case Op::Broadcast: return "broadcast";
  }
  return "an unknown collective";
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const DeviceCommInit& init)
      : rank_(init.rank),
        world_(init.world_size),
        device_(init.device),
        timeout_(init.timeout),
        host_(init.host) {
    LTX2_CHECK(host_ != nullptr, "NCCL bootstrap needs the CPU communicator");
    LTX2_CHECK(host_->world_size() == world_ && host_->rank() == rank_,
               "NCCL rank {} of {} got the CPU communicator of rank {} of {}", rank_, world_, host_->rank(),
               host_->world_size());
    LTX2_CUDA_CHECK(cudaSetDevice(device_.index));
    LTX2_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    LTX2_CUDA_CHECK(cudaEventCreateWithFlags(&inputs_ready_, cudaEventDisableTiming));
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
    // Every rank took part in the id's broadcast, so a slow init is NCCL's topology work, not a
    // missing peer: it gets at least a minute whatever the collectives' timeout.
    wait_for_comm("ncclCommInitRankConfig", std::max(timeout_, std::chrono::milliseconds(60000)));
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclCommunicator() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (comm_ && !aborted_) {
      bool clean = !broken_ && drained(Clock::now() + timeout_);
      if (clean) {
        ncclCommFinalize(comm_);
        clean = settled(Clock::now() + timeout_);
      }
      if (clean) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
    for (const Pending& p : pending_) cudaEventDestroy(p.done);
    for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
    if (inputs_ready_) cudaEventDestroy(inputs_ready_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Device device() const override { return device_; }
  uint64_t collectives_entered() const override { return entered_; }

  Tensor all_to_all(const Tensor& send, std::span<const int64_t> send_counts,
                    std::span<const int64_t> recv_counts) override {
    LTX2_CHECK(
        static_cast<int>(send_counts.size()) == world_ && static_cast<int>(recv_counts.size()) == world_,
        "all_to_all: {} send and {} recv counts for a world of {}", send_counts.size(), recv_counts.size(),
        world_);
    Tensor in = on_device(send);
    enter(Op::AllToAll, in, send_counts, recv_counts);
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
        LTX2_NCCL_CHECK(
            ncclSend(sp + soff * esize, send_counts[p], nccl_type(in.dtype()), p, comm_, stream_));
      if (recv_counts[p])
        LTX2_NCCL_CHECK(
            ncclRecv(rp + roff * esize, recv_counts[p], nccl_type(in.dtype()), p, comm_, stream_));
      soff += send_counts[p];
      roff += recv_counts[p];
    }
    LTX2_NCCL_CHECK(ncclGroupEnd());
    complete("all_to_all");
    return out;
  }

  Tensor all_gather(const Tensor& x) override {
    Tensor in = on_device(x);
    enter(Op::AllGather, in);
    Shape shape = in.shape();
    shape.insert(shape.begin(), world_);
    Tensor out = Tensor::empty(shape, in.dtype(), device_);
    LTX2_NCCL_CHECK(
        ncclAllGather(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in.dtype()), comm_, stream_));
    complete("all_gather");
    return out;
  }

  Tensor all_reduce_sum(const Tensor& x) override {
    Tensor in = on_device(x);
    enter(Op::AllReduceSum, in);
    Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
    LTX2_NCCL_CHECK(ncclAllReduce(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in.dtype()), ncclSum,
                                  comm_, stream_));
    complete("all_reduce_sum");
    return out;
  }

  Tensor broadcast(const Tensor& x, int root) override {
    LTX2_CHECK(root >= 0 && root < world_, "broadcast: root {} outside a world of {}", root, world_);
    Tensor in = on_device(x);
    enter(Op::Broadcast, in, {}, {}, root);
    Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
    LTX2_NCCL_CHECK(ncclBroadcast(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in.dtype()), root,
                                  comm_, stream_));
    complete("broadcast");
    return out;
  }

  // Every rank has entered once the statements are exchanged; the all-reduce keeps NCCL in step.
  void barrier() override {
    Tensor one = Tensor::full({1}, 1.f, DType::F32, device_);
    all_reduce_sum(one);
  }

  void synchronize() override {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [this] { return pending_.empty() || broken_; });
    lock.unlock();
    throw_if_broken("synchronize");
  }

 private:
  int rank_, world_;
  Device device_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  Communicator* host_;  // the fleet's CPU communicator of the same ranks
  cudaEvent_t inputs_ready_ = nullptr;
  uint64_t entered_ = 0;

  // A collective in flight: its completion event on stream_, recorded in issue order.
  struct Pending {
    cudaEvent_t done;
    Clock::time_point deadline;
    const char* what;
  };
  // Shared with the watchdog thread, under mu_.
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> spare_events_;
  std::string failure_;
  bool failure_is_timeout_ = false;
  bool stop_ = false;
  std::atomic<bool> broken_{false};
  std::atomic<bool> aborted_{false};  // comm_ was aborted by the watchdog: never touch it again
  std::thread watchdog_;

  // Every rank states what it is about to call through the CPU communicator first, so that a peer
  // that never comes is named (the CPU engine's timeout) and a mismatch (another collective, dtype,
  // size or all_to_all count) is seen by every rank alike as a CommError instead of a hung or
  // corrupting NCCL call. Costs one small CPU all-gather per collective.
  void enter(Op op, const Tensor& in, std::span<const int64_t> send_counts = {},
             std::span<const int64_t> recv_counts = {}, int root = 0) {
    throw_if_broken(op_name(op));
    ++entered_;
    std::vector<int64_t> mine{static_cast<int64_t>(op), static_cast<int64_t>(in.dtype()), in.numel(), root};
    mine.insert(mine.end(), send_counts.begin(), send_counts.end());
    mine.insert(mine.end(), recv_counts.begin(), recv_counts.end());
    mine.resize(kStatementFields + 2 * world_, 0);
    Tensor all;
    try {
      all = host_->all_gather(Tensor::from_vector_i64(mine, {static_cast<int64_t>(mine.size())}));
    } catch (const CommError& e) {
      fail(e.what(), dynamic_cast<const CommTimeout*>(&e) != nullptr);
    }
    check_statements(op, all);
    LTX2_CUDA_CHECK(cudaSetDevice(device_.index));
    // Inputs were produced on the default stream; the collective runs on ours, after them.
    LTX2_CUDA_CHECK(cudaEventRecord(inputs_ready_, nullptr));
    LTX2_CUDA_CHECK(cudaStreamWaitEvent(stream_, inputs_ready_, 0));
  }

  void check_statements(Op op, const Tensor& all) {
    auto field = [&](int p, int64_t i) { return all.item_i64({p, i}); };
    for (int p = 1; p < world_; ++p)
      for (int64_t i = 0; i < (op == Op::AllToAll ? 2 : kStatementFields); ++i)
        if (field(p, i) != field(0, i))
          fail(fmt::format(
                   "{} on rank {}: rank 0 called {} ({} elements of dtype {}) but rank {} called {} ({} "
                   "elements of dtype {})",
                   op_name(op), rank_, op_name(static_cast<Op>(field(0, 0))), field(0, 2), field(0, 1), p,
                   op_name(static_cast<Op>(field(p, 0))), field(p, 2), field(p, 1)),
               false);
    if (op != Op::AllToAll) return;
    for (int p = 0; p < world_; ++p)
      for (int q = 0; q < world_; ++q) {
        const int64_t sent = field(q, kStatementFields + p),
                      expected = field(p, kStatementFields + world_ + q);
        if (sent != expected)
          fail(fmt::format("all_to_all on rank {}: rank {} sends {} elements to rank {}, which expects {}",
                           rank_, q, sent, p, expected),
               false);
      }
  }

  Tensor on_device(const Tensor& x) const { return x.to(device_).contiguous(); }

  [[noreturn]] void fail(const std::string& message, bool timed_out) {
    {
      std::lock_guard lock(mu_);
      if (failure_.empty()) {
        failure_ = message;
        failure_is_timeout_ = timed_out;
      }
      broken_ = true;
    }
    changed_.notify_all();
    if (timed_out) throw CommTimeout(message, __FILE__, __LINE__);
    throw CommError(message, __FILE__, __LINE__);
  }

  void throw_if_broken(const char* what) {
    if (!broken_) return;
    std::string message;
    bool timed_out = false;
    {
      std::lock_guard lock(mu_);
      message = failure_.empty() ? fmt::format("{}: the NCCL communicator of rank {} is broken", what, rank_)
                                 : failure_;
      timed_out = failure_is_timeout_;
    }
    if (timed_out) throw CommTimeout(message, __FILE__, __LINE__);
    throw CommError(message, __FILE__, __LINE__);
  }

  // A non-blocking communicator may still be taking a call in (ncclInProgress): wait for that on
  // the host (no device wait), briefly spinning first since it is usually immediate.
  void wait_for_comm(const char* what, std::chrono::milliseconds timeout) {
    const auto start = Clock::now(), deadline = start + timeout;
    for (;;) {
      ncclResult_t state = ncclInProgress;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress)
        fail(fmt::format("{} failed on rank {}: {}", what, rank_, ncclGetErrorString(state)), false);
      if (Clock::now() > deadline)
        fail(fmt::format("{} did not complete on rank {} within {} ms", what, rank_, timeout.count()), true);
      if (Clock::now() - start < std::chrono::milliseconds(1))
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // After the NCCL calls of one collective: the default stream waits for them on the device (never
  // the host), and the watchdog gets their completion event and deadline.
  void complete(const char* what) {
    wait_for_comm(what, timeout_);
    cudaEvent_t done = nullptr;
    {
      std::lock_guard lock(mu_);
      if (!spare_events_.empty()) {
        done = spare_events_.back();
        spare_events_.pop_back();
      }
    }
    if (done == nullptr) LTX2_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    LTX2_CUDA_CHECK(cudaEventRecord(done, stream_));
    LTX2_CUDA_CHECK(cudaStreamWaitEvent(nullptr, done, 0));
    {
      std::unique_lock lock(mu_);
      pending_.push_back({done, Clock::now() + timeout_, what});
      changed_.notify_all();
      // Bounded run-ahead: a forward never needs more in flight, and NCCL's queues stay shallow.
      changed_.wait(lock, [this] { return pending_.size() <= kMaxInFlight || broken_; });
    }
    throw_if_broken(what);
  }

  // The watchdog thread: retires completed collectives in order; on a CUDA or NCCL error, or a
  // collective past its deadline (a peer gone or out of step), aborts the communicator so that its
  // kernels return, and marks it broken for the next call (or synchronize) to throw.
  void watch() {
    cudaSetDevice(device_.index);
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (pending_.empty() || broken_) {
        changed_.wait(lock);
        continue;
      }
      const Pending head = pending_.front();
      lock.unlock();
      const cudaError_t q = cudaEventQuery(head.done);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      std::string error;
      bool timed_out = false;
      if (q != cudaSuccess && q != cudaErrorNotReady) {
        error = fmt::format("{} on rank {}: {}", head.what, rank_, cudaGetErrorString(q));
      } else if (async != ncclSuccess && async != ncclInProgress) {
        error = fmt::format("{} failed on rank {}: {}", head.what, rank_, ncclGetErrorString(async));
      } else if (q == cudaErrorNotReady && Clock::now() > head.deadline) {
        error = fmt::format("{} did not complete on rank {} within {} ms (a peer is gone or out of step)",
                            head.what, rank_, timeout_.count());
        timed_out = true;
      }
      if (!error.empty()) {
        ncclCommAbort(comm_);
        aborted_ = true;
      }
      lock.lock();
      if (!error.empty()) {
        if (failure_.empty()) {
          failure_ = error;
          failure_is_timeout_ = timed_out;
        }
        broken_ = true;
        changed_.notify_all();
      } else if (q == cudaSuccess) {
        pending_.pop_front();
        spare_events_.push_back(head.done);
        changed_.notify_all();
      } else {
        changed_.wait_for(lock, std::chrono::microseconds(50));
      }
    }
  }

  // Teardown helpers (the watchdog has stopped): wait for the collectives in flight / for NCCL to
  // settle after ncclCommFinalize, until the deadline.
  bool drained(Clock::time_point deadline) {
    while (!pending_.empty()) {
      const cudaError_t q = cudaEventQuery(pending_.front().done);
      if (q == cudaSuccess) {
        spare_events_.push_back(pending_.front().done);
        pending_.pop_front();
        continue;
      }
      if (q != cudaErrorNotReady || Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }
  bool settled(Clock::time_point deadline) {
    for (;;) {
      ncclResult_t state = ncclInProgress;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) return true;
      if (state != ncclInProgress || Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const DeviceCommInit& init) {
  return std::make_unique<NcclCommunicator>(init);
}

}  // namespace ltx2::comm
