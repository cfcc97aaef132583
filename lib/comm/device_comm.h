// The seam for GPU communicators (NCCL): a worker whose rank owns a GPU asks this registry for its
// Communicator. The GPU engine installs its factory once per process (e.g. from the executable's
// main or the engine's own initialisation); it gets the CPU shared-memory communicator of the
// same ranks to bootstrap with (e.g. broadcast an ncclUniqueId from rank 0).
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "comm/communicator.h"

namespace ltx2::comm {

struct DeviceCommInit {
  int rank = 0;
  int world_size = 1;
  Device device;                      // this rank's GPU
  Communicator* host;                 // CPU communicator of the same ranks, for bootstrapping
  std::chrono::milliseconds timeout;  // per-collective timeout the engine must honour
};

using DeviceCommFactory = std::function<std::unique_ptr<Communicator>(const DeviceCommInit&)>;

// Installs the factory for GPU ranks (replacing any earlier one).
void set_device_comm_factory(DeviceCommFactory factory);
// Throws naming the device when no factory is installed in this executable.
std::unique_ptr<Communicator> make_device_comm(const DeviceCommInit& init);

}  // namespace ltx2::comm
