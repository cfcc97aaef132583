// Communicator: the collectives the parallel layers use, independent of the engine behind them
// (NCCL for GPU ranks, shared memory for CPU ranks).
//
// Contract for every engine (the shared test suite in tests/unit/comm checks it):
// - Tensor in, Tensor out; inputs may be any layout (they are read as if contiguous); outputs are
//   fresh contiguous tensors of the input's dtype on the communicator's device.
// - Counts are in elements, never bytes.
// - Every rank calls the same collectives in the same order (SPMD). A mismatch the engine can see
//   (another collective, another dtype or size) throws CommError on the ranks that see it.
// - Every collective has a timeout: a peer that never arrives makes it throw CommTimeout naming the
//   missing ranks instead of hanging. After any CommError the communicator is unusable (the fleet is
//   torn down and restarted; a desynchronised collective cannot be unwound).
// - all_reduce_sum gives every rank bit-identical results (the shared-memory engine adds in rank
//   order; NCCL beyond two ranks in its own ring order).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

#include "core/device.h"
#include "core/error.h"
#include "core/tensor.h"

namespace ltx2::comm {

// A collective failed (desync, peer gone, aborted). Not a job error: it breaks the fleet.
class CommError : public Error {
 public:
  using Error::Error;
};

// A peer did not arrive before the collective's timeout.
class CommTimeout : public CommError {
 public:
  using CommError::CommError;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual Device device() const = 0;

  // Sends send_counts[p] consecutive elements of `send` (flattened, segments in rank order) to rank
  // p; returns the concatenation in rank order of what each rank p sent here (recv_counts[p]
  // elements each), as a 1-D tensor. Both count lists have world_size entries and must agree
  // across ranks (send_counts[q] on rank p == recv_counts[p] on rank q).
  virtual Tensor all_to_all(const Tensor& send, std::span<const int64_t> send_counts,
                            std::span<const int64_t> recv_counts) = 0;
  // Every rank passes the same shape; returns [world_size, ...shape], rank p's tensor at index p.
  virtual Tensor all_gather(const Tensor& x) = 0;
  // Element-wise sum over ranks (f32, i32, i64), same shape as x.
  virtual Tensor all_reduce_sum(const Tensor& x) = 0;
  // Returns root's x on every rank; non-root ranks pass a tensor of the same shape and dtype
  // (its values are ignored).
  virtual Tensor broadcast(const Tensor& x, int root) = 0;
  // Returns once every rank has entered it.
  virtual void barrier() = 0;

  // Returns once every collective issued so far has completed on the device; throws the CommError
  // (or CommTimeout) of one that failed. Engines that finish each collective before returning (the
  // shared-memory one) return at once. A fleet worker calls it at the end of every job.
  virtual void synchronize() {}

  // Collectives entered so far (for error reports: where did a rank stop).
  virtual uint64_t collectives_entered() const = 0;
};

}  // namespace ltx2::comm
