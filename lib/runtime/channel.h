// FleetChannel: the shared-memory layout between the driver and its workers, and the typed
// operations on it. One region per fleet generation (a restarted fleet gets a fresh one).
//
// Region layout (offsets are multiples of 64; sizes come from ChannelSizes):
//   [ControlBlock]                       fixed fields + RankBlock[kMaxRanks]
//   [setup area: setup_capacity]         the setup record {"runner", "config"}
//   [job slot 0 .. job_slots-1]          each: JobSlot header (64 B) + job_capacity bytes
//   [result ring 0 .. world-1]           each: RingHeader (64 B) + ring_capacity bytes
//   [communicator block]                 ShmCommSet(world, comm_slot_capacity, node_ranks).bytes():
//                                        the world's communicator region, then the group regions
//
// Trust: any process can write any byte of the region, so nothing read from it is used to address
// it unchecked. The ControlBlock records the sizes; the driver computes the layout from its
// ChannelSizes, an attaching worker from the recorded sizes (checked against the region once), and
// each keeps it in its own memory. What a rank writes and the driver reads is a value it checks
// before use (a ring's head and frame lengths: result_reader.h); the driver counts the jobs it
// posted itself.
// Who may write what (everything else is read-only after the driver formats the region):
//   driver:  ControlBlock.shutdown, jobs_posted, jobs_changed (bump), ring_space (bump); every
//            JobSlot; RingHeader.tail of every ring; before spawning: the setup area and each
//            RankBlock's device_type/device_index.
//   rank r:  RankBlock[r] (state, heartbeat_ns from its heartbeat thread, progress_ns and activity
//            from its working thread, jobs_done, error); RingHeader.head and
//            .waiting_for and the free data of ring r; results_changed (bump); its slot of the
//            communicator regions (the world's and its groups').
//   anyone:  the communicators' abort words (abort_comms: a fatal error anywhere releases every
//            collective of the world and of every group).
// A fleet across nodes (nodes.h) has one such region per node, all of the same layout; a node's
// link thread writes there, on behalf of the ranks of other nodes, what those ranks write in
// theirs (rank blocks, ring heads and data, communicator slots) and, on an agent's node, what the
// driver writes (job slots, jobs_posted, shutdown, ring tails).
// Jobs: job number n (1, 2, ...) lives in slot (n-1) % job_slots; the driver may write it once every
// rank's jobs_done >= n - job_slots. Each rank runs jobs 1, 2, ... in order: it waits for
// jobs_posted >= n, reads the slot, runs, writes its terminal result, then sets jobs_done = n.
// Result ring r: single producer (rank r), single consumer (driver). Frames start at multiples of
// 64: [u64 length, padded to 64 bytes][record, padded to 64 bytes], so every tensor of a record is
// 64-byte aligned in the ring; a length of ~0 means "wrap to the start". head/tail count bytes ever
// written/released; free space = capacity - (head - tail). The producer writes a record with one
// copy of each tensor straight into the ring (EncodedRecord::write); the driver reads it in place
// (result_reader.h: tensors are views, tail moves past a record once its views are dropped). While
// the producer waits for space it publishes the bytes it needs in waiting_for (0 otherwise).
// There are no locks: a dead process cannot leave anything held; waits use futexes with timeouts.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "comm/shm_comm_set.h"
#include "core/device.h"
#include "runtime/record.h"

namespace ltx2::runtime {

constexpr int kMaxRanks = 64;

enum class RankState : uint32_t { Starting = 0, Ready = 1, Running = 2, Exited = 3, Failed = 4 };

struct ChannelSizes {
  int world = 1;
  size_t setup_capacity = 1 << 20;
  size_t job_slots = 4;
  size_t job_capacity = 16 << 20;
  size_t ring_capacity = 32 << 20;
  size_t comm_slot_capacity = 16 << 20;
  int node_ranks = 0;  // the ranks of one node (0: all of them, one machine); the group cuts follow it
};

constexpr size_t kActivityWords = 6;  // RankBlock::activity: up to 47 bytes and a terminating zero

struct alignas(64) RankBlock {
  std::atomic<uint32_t> state;
  uint32_t device_type;  // written by the driver before spawning: DeviceType
  int32_t device_index;
  std::atomic<uint64_t> heartbeat_ns;  // steady clock (CLOCK_MONOTONIC), shared by all processes
  std::atomic<uint64_t> progress_ns;   // the same clock: the working thread's last note_progress
  std::atomic<uint64_t> jobs_done;
  std::atomic<uint32_t> error_set;
  char error[500];
  // What the working thread noted last, for messages: a seqlock (odd while it changes) over
  // 8-byte words, so that every access is atomic.
  std::atomic<uint32_t> activity_seq;
  std::atomic<uint64_t> activity[kActivityWords];
};

struct alignas(64) ControlBlock {
  uint32_t magic, version;
  uint32_t world;
  uint32_t job_slots;
  uint64_t setup_capacity, job_capacity, ring_capacity, comm_slot_capacity;  // as in ChannelSizes
  uint32_t node_ranks;                                                       // as in ChannelSizes, > 0
  uint64_t setup_bytes;
  uint64_t heartbeat_interval_ms, collective_timeout_ms;
  std::atomic<uint32_t> shutdown;
  std::atomic<uint32_t> jobs_changed;
  std::atomic<uint32_t> results_changed;
  std::atomic<uint32_t> ring_space;
  std::atomic<uint64_t> jobs_posted;
  RankBlock ranks[kMaxRanks];
};

struct alignas(64) JobSlot {
  std::atomic<uint64_t> seq;  // job number held (0: never used)
  uint64_t job_id;            // the controller's id (stable across fleet restarts)
  uint64_t attempt;
  uint64_t bytes;  // record length
};

struct alignas(64) RingHeader {
  std::atomic<uint64_t> head;
  std::atomic<uint64_t> waiting_for;
  alignas(64) std::atomic<uint64_t> tail;
};

// Bytes a record of `record_bytes` takes in a result ring (frame header and padding included).
uint64_t ring_frame_bytes(uint64_t record_bytes);
// The frame header's size: a record starts this far into its frame.
constexpr uint64_t kRingFrameHeader = 64;
// A frame length that means "the rest of the ring is unused; continue at its start".
constexpr uint64_t kRingWrap = ~0ull;

// A job as a worker reads it from its slot (the record is not decoded yet).
struct PostedJob {
  uint64_t seq = 0, job_id = 0, attempt = 0;
  const uint8_t* record = nullptr;
  size_t bytes = 0;
};

uint64_t monotonic_ns();

class FleetChannel {
 public:
  // Bytes a region with these sizes needs.
  static size_t region_bytes(const ChannelSizes& sizes);
  // Driver: lays out a zero-filled region and writes the setup record.
  static FleetChannel format(void* base, size_t bytes, const ChannelSizes& sizes, const EncodedRecord& setup,
                             std::chrono::milliseconds heartbeat_interval,
                             std::chrono::milliseconds collective_timeout);
  // Worker: attaches to a formatted region (checks magic, version, and that the layout its sizes
  // give fits the region; throws a one-line ltx2::Error otherwise).
  static FleetChannel attach(void* base, size_t bytes);

  ControlBlock& control() const { return *cb_; }
  RankBlock& rank(int r) const { return cb_->ranks[r]; }
  int world() const { return layout_.world; }
  // The communicator block; it starts with the world communicator's region, comm_bytes() long.
  void* comm_base() const { return base_ + layout_.comm_offset; }
  size_t comm_bytes() const { return comm_set().world_region().bytes; }
  // The block's layout (the world's region and the groups').
  const comm::ShmCommSet& comm_set() const { return layout_.comm; }
  // The ranks of one node (ChannelSizes::node_ranks; the world on one machine).
  int node_ranks() const { return layout_.node_ranks; }
  // Aborts every collective of the world and of the groups (any process).
  void abort_comms(const std::string& reason) const { comm_set().abort(comm_base(), reason); }
  Record setup_record() const;

  // Driver: writes job `seq` if its slot is free (false otherwise).
  bool try_post_job(uint64_t seq, uint64_t job_id, uint64_t attempt, const std::vector<uint8_t>& record);
  // Worker: the job numbered `seq` if posted (nullopt otherwise). Throws if the slot holds another.
  std::optional<PostedJob> posted_job(uint64_t seq) const;
  // A node agent (nodes.h): writes job `seq` as the driver posted it in its own region, without
  // the free-slot check (the driver made it against every rank's jobs_done before posting).
  void mirror_job(uint64_t seq, uint64_t job_id, uint64_t attempt, const uint8_t* record, size_t bytes);

  // Rank r: appends a record to ring r, waiting for space while `keep_waiting()` is true; throws if
  // the record can never fit (a frame must fit in half the ring) or waiting was abandoned.
  void push_result(int r, const EncodedRecord& rec, const std::function<bool()>& keep_waiting);
  // Result ring r: its header and data (the driver reads them through a ResultReader).
  RingHeader* ring(int r) const;
  uint8_t* ring_data(int r) const { return reinterpret_cast<uint8_t*>(ring(r)) + sizeof(RingHeader); }
  uint64_t ring_capacity() const { return layout_.ring_capacity; }

  // Rank r's working thread: it got on with its work (set up, picked up a job, did a step, sent a
  // result); `activity` says what, for the driver's messages (its first 47 bytes are kept).
  void note_progress(int r, std::string_view activity);
  // What rank r noted last ("" before anything, or while it kept changing under the read).
  std::string activity_of(int r) const;

  // Rank r: records a fatal error message (first one wins).
  void record_error(int r, const std::string& message);
  std::string error_of(int r) const;

 private:
  // Where everything lies (capacities rounded up to 64 bytes), in this process's memory.
  struct Layout {
    int world = 0, node_ranks = 0;
    size_t comm_slot_capacity = 0;
    size_t job_slots = 0, job_capacity = 0, ring_capacity = 0, setup_bytes = 0;
    size_t setup_offset = 0, jobs_offset = 0, rings_offset = 0, comm_offset = 0;
    comm::ShmCommSet comm{1, 0, 1};  // the communicator block's regions
    size_t total_bytes = 0;
  };
  static Layout layout_of(const ChannelSizes& sizes);

  uint8_t* base_ = nullptr;
  ControlBlock* cb_ = nullptr;
  Layout layout_;
  uint64_t jobs_posted_ = 0;  // driver: its own count (ControlBlock.jobs_posted is for the ranks)
  JobSlot* slot(size_t i) const;
  uint8_t* slot_data(size_t i) const { return reinterpret_cast<uint8_t*>(slot(i)) + sizeof(JobSlot); }
};

}  // namespace ltx2::runtime
