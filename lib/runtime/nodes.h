// RemoteNodes: the driver's handle on the other nodes of a job that spans machines (node 0 drives;
// every other node runs a node agent, lib/runtime/mpi/node_link.h). Without MPI, or with one node,
// none is installed and fleets are local, as before.
//
// How a fleet spans nodes: every node holds a region of the same layout (channel.h) for the
// whole world; node k's agent forks global ranks [k * L, (k + 1) * L) (L ranks a node, the same on
// every node) over its own region, and the link threads keep the parts the other side reads in
// step (jobs and the shutdown word driver -> agents; rank blocks, result rings agent -> driver;
// communicator slots and the abort word between all nodes). So the controller reads remote ranks
// in its own region as if they were local, and only starting, stopping and reaping them goes
// through this interface.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "runtime/channel.h"

namespace ltx2::runtime {

class ShmRegion;

// What every node needs to start its share of one fleet generation.
struct NodeFleetSpec {
  uint64_t generation = 0;
  ChannelSizes sizes;  // sizes.world: the whole fleet's
  std::string runner;
  nlohmann::json setup_config;
  std::vector<Device> devices;  // one per global rank
  std::chrono::milliseconds heartbeat_interval{200}, heartbeat_timeout{30000}, collective_timeout{300000};
};

class RemoteNodes {
 public:
  virtual ~RemoteNodes() = default;
  // Nodes in the job, this one (node 0) included.
  virtual int nodes() const = 0;
  // Starts `spec` on every other node and mirrors `channel` (in `region`, kept mapped until
  // stop_fleet) with theirs. Returns at once; agents report their ranks through the mirror.
  virtual void start_fleet(const NodeFleetSpec& spec, std::shared_ptr<ShmRegion> region,
                           FleetChannel channel) = 0;
  // Every agent SIGKILLs and reaps its workers of the running generation; the mirror stops.
  virtual void stop_fleet() = 0;
  // Remote ranks of the running generation whose worker exited since the last call: (rank, "exited
  // with code 3 on node 1").
  virtual std::vector<std::pair<int, std::string>> take_exits() = 0;
  // A node that stopped answering for longer than the fleet's heartbeat timeout, or whose link
  // failed, described; nullopt while every node answers.
  virtual std::optional<std::string> lost_node() const = 0;
};

// Installed once by the MPI start-up of node 0 (worker.h's run_worker_if_requested).
void set_remote_nodes(std::unique_ptr<RemoteNodes> nodes);
// nullptr on a single machine.
RemoteNodes* remote_nodes();
// 1 on a single machine.
int node_count();
// Drops the installed nodes (their destructor tells the agents to quit); for orderly ends.
void release_remote_nodes();

}  // namespace ltx2::runtime
