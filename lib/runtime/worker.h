// The worker side of a fleet: the entry every fleet-capable executable calls first thing in main():
//
//   int main(int argc, char** argv) {
//     if (auto rc = ltx2::runtime::run_worker_if_requested(argc, argv)) return *rc;
//     ...  // the driver / ordinary program
//   }
//
// When argv is "<exe> --worker --rank R --driver-pid P" this runs the worker loop and returns its
// exit code: attach to the fleet region (inherited descriptor, shm_region.h), start heartbeats, build the
// communicator and the runner, setup, report ready, then run jobs in order until the driver asks to stop.
// Exit codes: 0 after an orderly stop; 3 after a fatal error (its message is in the rank's error
// record); 2 for malformed worker arguments.
// In a build with MPI, a process that mpirun / srun started as one of several is a node of one job
// across machines (runtime/mpi/node_link.h): MPI rank 0 goes on as the driver (this returns
// nullopt), every other rank runs its node agent here and this returns the agent's exit code.
#pragma once

#include <optional>

namespace ltx2::runtime {

std::optional<int> run_worker_if_requested(int argc, char** argv);

}  // namespace ltx2::runtime
