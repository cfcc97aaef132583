// The NCCL engine of the Communicator (GPU ranks, one GPU per rank). Built only when NCCL is found
// with the CUDA backend (LTX2_WITH_NCCL).
//
// Bootstrap: rank 0 makes the ncclUniqueId and broadcasts it over the CPU communicator of the same
// ranks (the fleet's shared memory); the communicator is created non-blocking.
//
// Before each collective every rank states its call (op, dtype, size, all_to_all counts) through
// the CPU communicator: a peer that never comes is named by that engine's timeout, and every rank
// sees a mismatch alike as a CommError rather than a hung or corrupting NCCL call. The collective
// then runs on this rank's own stream after the default stream's work, and the default stream waits
// for it on the device: the host never waits, so a forward keeps the GPU busy across collectives.
// A watchdog thread retires the collectives' completion events in order; a CUDA or NCCL error, or a
// collective past its deadline (a peer died or is out of step), makes it abort the communicator
// (ncclCommAbort, so the kernels return) and the next call or synchronize() throws (CommTimeout
// for the deadline). After any error the communicator is unusable, as the contract says. The CPU
// communicator must outlive this one.
#pragma once

#include <memory>

#include "comm/device_comm.h"

namespace ltx2::comm {

std::unique_ptr<Communicator> make_nccl_communicator(const DeviceCommInit& init);

}  // namespace ltx2::comm
