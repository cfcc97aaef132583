// CommGroups: the communicators of rank groups, for strategies that run parts of a job on disjoint
// sets of ranks at once (guidance-branch parallelism: each group runs its passes sequence parallel
// over its own communicator while the others run theirs).
//
// A cut into G groups of a world of W ranks makes groups of S = W / G consecutive ranks: group g
// holds ranks [g S, (g + 1) S), and a rank's place in its group is rank - g S. Consecutive, because
// a fleet across nodes gives each node consecutive ranks (runtime/nodes.h): a group that fits in a
// node stays in it, so its collectives never leave the node (placement by topology: sequence
// parallel inside a node, only the world's collectives across nodes).
#pragma once

#include "comm/communicator.h"
#include "core/error.h"

namespace ltx2::comm {

class CommGroups {
 public:
  virtual ~CommGroups() = default;
  // Whether this rank can have a communicator in the cut into `groups` groups.
  virtual bool has_cut(int groups) const = 0;
  // This rank's communicator in that cut (made on first use, then kept), or nullptr without one.
  // The first use is collective over the group for engines whose set-up is (NCCL's): every rank
  // of the world asks for the same cut at the same point of a job.
  virtual Communicator* split(int groups) = 0;
};

// Whether `groups` (null: a communicator without groups) has the cut into `cut` groups.
inline bool has_cut(const CommGroups* groups, int cut) {
  return groups != nullptr && groups->has_cut(cut);
}

// This rank's communicator in the cut of a `world`-rank world into `cut` groups, as a strategy
// that chose that cut needs it: nullptr when each group is one rank (the rank runs its part alone);
// throws, naming `what`, when the groups have no communicator for this rank.
inline Communicator* group_communicator(CommGroups* groups, int cut, int world, int rank, const char* what) {
  if (world / cut == 1) return nullptr;
  Communicator* group = groups != nullptr ? groups->split(cut) : nullptr;
  LTX2_CHECK(group != nullptr, "{}: rank {} has no communicator among {} groups", what, rank, cut);
  return group;
}

}  // namespace ltx2::comm
