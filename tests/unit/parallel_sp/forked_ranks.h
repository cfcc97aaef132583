// Runs a body on W forked CPU ranks, each with a ShmCommunicator over one shared-memory block (a
// fleet's: ShmCommSet, with the group regions of its cuts, all ranks on one node), and brings back what every
// rank returned. The children never touch Catch: they write their tensors (or their error) to a scratch
// folder and _exit; the parent reaps every child, killing any that outlive the deadline. The region has no
// name in /dev/shm (ShmRegion removes it at creation), so nothing is left behind even when a rank crashes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "comm/comm_groups.h"
#include "comm/communicator.h"
#include "core/tensor.h"

namespace ltx2::test {

using RankTensors = std::map<std::string, Tensor>;
using RankBody = std::function<RankTensors(comm::Communicator&)>;
// A body that also gets the rank's groups (comm_groups.h).
using GroupedRankBody = std::function<RankTensors(comm::Communicator&, comm::CommGroups&)>;

struct RankResult {
  RankTensors tensors;
  std::string error;  // empty when the rank returned normally
};

// Every rank runs with one OpenMP thread (libgomp's thread pool does not survive fork).
std::vector<RankResult> run_forked_ranks(
    int world, const RankBody& body, std::chrono::milliseconds collective_timeout = std::chrono::seconds(20));
std::vector<RankResult> run_forked_grouped_ranks(
    int world, const GroupedRankBody& body,
    std::chrono::milliseconds collective_timeout = std::chrono::seconds(20));

}  // namespace ltx2::test
