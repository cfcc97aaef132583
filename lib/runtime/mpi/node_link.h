// Node link: one job across nodes over MPI. mpirun or srun starts the program once per node; MPI
// rank 0 is the driver as on one machine (CLI, controller, blending, MP4), every other MPI rank is
// a node agent that forks its node's share of the fleet's workers over its own shared memory
// (nodes.h says which ranks and how the regions mirror each other).
//
// Each node process has one link thread, the only thread that calls MPI (MPI_THREAD_SERIALIZED:
// MPI_Init and MPI_Finalize on the main thread, while no link thread runs). It polls, never
// blocks: non-blocking sends, probed receives, so every wait is bounded by a clock. Messages (one
// MPI tag; MPI keeps their order between two processes) are
//   [u32 kind][u32 0][u64 fleet generation][payload]:
//   ping            any -> any, every 100 ms: the peer is alive (silent past the fleet's heartbeat
//                   timeout: the driver calls the node lost, an agent kills its workers and exits)
//   quit            driver -> agent: kill the workers, finalize, exit 0
//   start / stop    driver -> agent: a fleet generation (JSON spec) / SIGKILL and reap its workers
//   job / shutdown / tail   driver -> agent: a posted job slot, the shutdown word, a ring's tail
//   ranks / ring / exit     agent -> driver: its ranks' blocks (heartbeat and progress sent as ages,
//                   since clocks differ between machines), ring bytes at their own ring offsets (the
//                   driver's ring is a byte copy, so its reader and the producer's flow control work
//                   unchanged), a worker that exited
//   abort           any -> all: the communicator's abort word, with its reason
//   relay           node -> all nodes: one communicator round (below)
// Communicator relay (the CPU communicator across nodes): every node's region has a slot for every
// global rank (shm_communicator.h); a node's own ranks write theirs, its link writes the others.
// Round g: once every local rank has published g, the link sends their slot headers and chunks to
// every other node and marks the remote slots consumed(g) (nobody else reads its ranks' real
// slots); once every other node's round g has come, it writes the remote slots and publishes g.
// A node is at most one round ahead of another, so at most one round a node is buffered. Abort and
// timeouts stay the communicator's: a node that never sends its round times the collective out.
#pragma once

#include <optional>

namespace ltx2::runtime {

// When this process is one of several MPI processes (an mpirun / srun launch: Open MPI's, PMI's or
// PMIx's variables in the environment): MPI rank 0 installs the other nodes (nodes.h) and returns
// nullopt (it goes on as the driver); another rank runs the node agent until the driver quits or
// is lost and returns its exit code (0 after quit, 1 otherwise). nullopt without such a launch or
// with an MPI world of one. Throws ltx2::Error when MPI cannot start.
std::optional<int> run_node_agent_if_launched();

}  // namespace ltx2::runtime
