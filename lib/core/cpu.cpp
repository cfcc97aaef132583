// CPU counts and the rank processes' share of them (see cpu.h).
#include "core/cpu.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace ltx2 {

int machine_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int rank_threads(int cores, int node_ranks) {
  return std::max(1, cores / std::max(1, node_ranks));
}

int share_cores(int node_ranks) {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (!env || !*env) omp_set_num_threads(rank_threads(machine_cores(), node_ranks));
  return omp_get_max_threads();
}

}  // namespace ltx2
