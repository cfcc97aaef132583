// ShmCommunicator: the Communicator for CPU ranks, over one shared-memory region (ranks may be
// processes mapping the same POSIX shm object, or threads sharing one buffer).
//
// Region layout (format_region writes it once, before any rank attaches):
//   [CommHeader, 256 B] [slot 0] [slot 1] ... [slot W-1]
//   slot p = [CommSlot, 64 B][data: slot_capacity bytes], slot stride = 64 + slot_capacity.
// Who writes what:
//   - CommHeader.magic/world/slot_capacity: format_region only; read-only afterwards.
//   - CommHeader.changed (futex word): bumped by any rank after it changes its slot, and by abort().
//   - CommHeader.aborted/abort_reason: the first process that calls abort() (compare-and-swap).
//   - slot p (all fields and data): rank p only. Others read it after seeing `published`.
// Protocol: a collective is one or more rounds; round g of rank p: wait until every rank consumed
// round g-1 (so p may overwrite its slot), write up to slot_capacity bytes of p's outgoing stream,
// publish g, wait until every rank published g, read what p needs from every slot, mark consumed g.
// Ranks agree on the number of rounds because every slot carries its stream's total length.
// No locks: a dead rank cannot block the others beyond the collective's timeout.
// Trust: any rank can write any byte of the region. A rank reads world and slot_capacity once
// (checked against the region's size) and addresses slots by its own copies; it reads a peer's
// chunk only where the layout every rank computes alike puts it (chunk k of a stream of T bytes is
// [k * slot_capacity, min(T, (k + 1) * slot_capacity)), T fixed by the collective except for
// all_to_all's, whose count header is checked), so a corrupt slot is a CommError naming the peer.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "comm/futex.h"

namespace ltx2::comm {

// The region's header and each rank's slot header (layout above). Public so that tests can play a
// misbehaving peer; ranks touch them only through ShmCommunicator.
struct CommHeader {
  uint32_t magic;
  uint32_t world;
  uint64_t slot_capacity;
  std::atomic<uint32_t> changed;
  std::atomic<uint32_t> aborted;
  char abort_reason[200];
};

struct CommSlot {
  std::atomic<uint64_t> published;
  std::atomic<uint64_t> consumed;
  uint32_t op, dtype;
  uint64_t meta0, meta1;
  uint64_t total_bytes, chunk_offset, chunk_bytes;
};

// Rank p's slot header in a region whose slots hold `slot_capacity` bytes.
CommSlot* comm_slot(void* base, size_t slot_capacity, int p);

class ShmCommunicator final : public Communicator {
 public:
  // Bytes a region for `world` ranks with `slot_capacity` bytes per rank needs.
  static size_t region_bytes(int world, size_t slot_capacity);
  // Lays out an empty region (zeroed counters); slot_capacity is rounded down to 64 bytes.
  static void format_region(void* base, size_t bytes, int world, size_t slot_capacity);
  // Makes every collective in flight or to come on this region throw CommError(reason). Any process.
  // The first call's reason stays.
  static void abort(void* base, const std::string& reason);
  // The reason the region was aborted with ("" if it was not), once its writer has finished it.
  static std::string abort_reason(const void* base);

  ShmCommunicator(void* base, size_t bytes, int rank, std::chrono::milliseconds timeout);

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Device device() const override { return Device::cpu(); }
  Tensor all_to_all(const Tensor& send, std::span<const int64_t> send_counts,
                    std::span<const int64_t> recv_counts) override;
  Tensor all_gather(const Tensor& x) override;
  Tensor all_reduce_sum(const Tensor& x) override;
  Tensor broadcast(const Tensor& x, int root) override;
  void barrier() override;
  uint64_t collectives_entered() const override { return entered_; }

 private:
  struct Signature {
    uint32_t op, dtype;
    uint64_t meta0, meta1;
  };
  // Called for every peer (in rank order) with each chunk [offset, offset+n) of its stream.
  using ChunkFn = std::function<void(int peer, uint64_t offset, const uint8_t* data, uint64_t n)>;
  // The bytes of the stream rank p must send in this collective, where the op fixes them (nullopt:
  // only p knows, as in all_to_all, whose ChunkFn checks what it reads).
  using PeerBytes = std::function<std::optional<uint64_t>(int peer)>;

  void exchange(const Signature& sig, const uint8_t* mine, uint64_t my_bytes, const PeerBytes& peer_bytes,
                const ChunkFn& on_chunk);
  void exchange_rounds(const Signature& sig, const uint8_t* mine, uint64_t my_bytes,
                       const PeerBytes& peer_bytes, const ChunkFn& on_chunk);
  void check_signature(int p, const Signature& sig) const;
  // Peer p's stream length in this collective (`first`: as it published it in round 0, nullopt in
  // round 0 itself); throws naming p when it is not what `peer_bytes` or round 0 says.
  uint64_t checked_total(int p, const PeerBytes& peer_bytes, std::optional<uint64_t> first) const;
  // Peer p's chunk of `round` of a stream of `total` bytes: [round * capacity, +n) with n what is
  // left of the stream, at most a slot; throws naming p when its slot says otherwise.
  uint64_t checked_chunk(int p, uint64_t round, uint64_t total) const;
  void wait_all(const std::function<bool(int)>& arrived, const char* what, Clock::time_point deadline);
  Tensor checked_cpu(const Tensor& x, const char* op) const;

  uint8_t* base_;
  int rank_ = 0, world_ = 0;
  size_t capacity_ = 0;
  std::chrono::milliseconds timeout_;
  uint64_t generation_ = 0;
  uint64_t entered_ = 0;
  bool broken_ = false;
  const char* current_op_ = "";
};

}  // namespace ltx2::comm
