// The NCCL engine of the Communicator (GPU ranks, one GPU per rank). Built only when NCCL is found
// with the CUDA backend (LTX2_WITH_NCCL).
//
// Bootstrap: rank 0 makes the ncclUniqueId and broadcasts it over the CPU communicator of the same
// ranks (the fleet's shared memory). The communicator is created non-blocking, and every
// collective is enqueued on this rank's own stream and then waited for by polling the stream and
// ncclCommGetAsyncError against a deadline: a collective that never completes (a dead or
// desynchronised peer) makes the rank abort the communicator (ncclCommAbort) and throw
// CommTimeout instead of hanging. After any error the communicator is unusable, as the contract
// says. Before each collective every rank states its call (op, dtype, size, all_to_all counts)
// through the CPU communicator, which names a peer that never comes and lets every rank see a
// mismatch as a CommError rather than a hung or corrupting NCCL call. The CPU communicator must
// outlive this one.
#pragma once

#include <memory>

#include "comm/device_comm.h"

namespace ltx2::comm {

std::unique_ptr<Communicator> make_nccl_communicator(const DeviceCommInit& init);

}  // namespace ltx2::comm
