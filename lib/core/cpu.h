// The CPUs a process may use, and how a fleet's rank processes on one node share them.
#pragma once

namespace ltx2 {

// The CPUs this process may run on (its affinity mask), at least 1.
int machine_cores();

// The OpenMP threads of one of `node_ranks` rank processes on a node of `cores` CPUs: the cores
// divided among the ranks, at least one each. N ranks with a pool of every core each would run N
// times the cores, whose threads spin against one another at each parallel region's barrier.
int rank_threads(int cores, int node_ranks);

// Sets this process's OpenMP pool to rank_threads(machine_cores(), node_ranks), unless
// OMP_NUM_THREADS is set (the user's choice, which OpenMP already follows). Returns the pool's size.
// Call it before the process's first parallel region.
int share_cores(int node_ranks);

}  // namespace ltx2
