// ShmCommSet: the shared-memory communicator regions of a fleet in one block, the world's and one
// per group of each cut of the world the fleet prepares (comm_groups.h says what a cut is).
//
// Block layout (each region as ShmCommunicator lays it out, each starting at a multiple of 64):
//   [world: W slots] [cut G1: group 0 (W/G1 slots), group 1, ...] [cut G2: ...] ...
// The cuts, in increasing G: G in {2, 3, 4} (a guided step has at most 4 passes to spread),
// G < W, G divides W, and the group size W/G divides the ranks of a node (`node_ranks`), so that
// no group spans nodes: a node's link relays only the world region (runtime/mpi/node_link.h).
// Who writes what: each region as shm_communicator.h says; abort() writes every region's abort
// word, so a failure anywhere releases the collectives of every group as well as the world's, and
// every region names the first failure (the world's region decides which was first).
// The layout is computed from (world, slot capacity, node_ranks) that each process keeps in its
// own memory, never read back from the block.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/comm_groups.h"
#include "comm/shm_communicator.h"

namespace ltx2::comm {

class ShmCommSet {
 public:
  struct Region {
    size_t offset = 0, bytes = 0;  // from the block's base
    int world = 0;                 // the ranks it has slots for
  };

  // Throws unless 1 <= node_ranks <= world and node_ranks divides world.
  ShmCommSet(int world, size_t slot_capacity, int node_ranks);

  size_t bytes() const { return bytes_; }
  // Formats every region of a block of at least bytes().
  void format(void* base) const;
  // Aborts every region's collectives with `reason` (any process).
  void abort(void* base, const std::string& reason) const;

  Region world_region() const { return {0, region_bytes(world_), world_}; }
  // The cuts prepared (numbers of groups, increasing).
  const std::vector<int>& cuts() const { return cuts_; }
  // Group g's region in the cut into `groups`; nullopt when that cut is not prepared.
  std::optional<Region> group_region(int groups, int g) const;

 private:
  size_t region_bytes(int ranks) const;

  int world_ = 1;
  size_t capacity_ = 0;
  std::vector<int> cuts_;
  std::vector<size_t> cut_offsets_;  // where each cut's first group region starts
  size_t bytes_ = 0;
};

// One rank's CommGroups over a formatted block: the group's ShmCommunicator, and when `device` is
// given the GPU engine's communicator of the group, bootstrapped over it as the world's is over
// the world's shared memory. Communicators are made on first use and live as long as this object.
class ShmCommGroups final : public CommGroups {
 public:
  // Makes rank `group_rank` of a `group_size`-rank group's GPU communicator over `host`.
  using DeviceFactory =
      std::function<std::unique_ptr<Communicator>(Communicator& host, int group_rank, int group_size)>;

  ShmCommGroups(void* base, ShmCommSet set, int rank, std::chrono::milliseconds timeout,
                DeviceFactory device = {});

  bool has_cut(int groups) const override;
  Communicator* split(int groups) override;

 private:
  struct Made {
    std::unique_ptr<ShmCommunicator> host;
    std::unique_ptr<Communicator> device;  // declared last: destroyed before the host it states calls on
  };

  uint8_t* base_;
  ShmCommSet set_;
  int rank_;
  std::chrono::milliseconds timeout_;
  DeviceFactory device_;
  std::map<int, Made> made_;
};

}  // namespace ltx2::comm
