// Launcher: which ranks a fleet gets (GPUs or CPU ranks), and starting/stopping worker processes.
//
// Nothing here initialises CUDA (the driver never does): visible GPUs are counted from
// CUDA_VISIBLE_DEVICES when it is set (entries up to the first invalid one, as CUDA reads it), else
// from /proc/driver/nvidia/gpus. Workers inherit the environment unchanged, so every worker sees
// every visible GPU and rank r binds cuda:devices[r] (peer access between ranks stays possible).
//
// Workers are the driver's own executable re-executed (/proc/self/exe by default) as
//   <exe> --worker --rank <r> --driver-pid <pid>
// with the fleet's shared memory on descriptor kWorkerRegionFd (see shm_region.h; worker.h for the
// call every executable makes first thing in main()). A worker dies with its
// driver (PR_SET_PDEATHSIG; the fork happens on the controller's thread) and ignores SIGINT, so a
// Ctrl-C reaches the driver, which stops the fleet in order.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/device.h"

namespace ltx2::runtime {

// Parses "--gpus" values like "0,2,3" (indices into the visible GPUs; unique, non-negative).
std::vector<int> parse_gpu_list(const std::string& text);
// Visible GPUs, without touching CUDA (see above).
int visible_gpu_count();
// The devices of a fleet: `cpu_ranks` > 0 gives that many CPU ranks; else the listed GPUs (each
// checked against the visible count); else every visible GPU. Throws when that leaves none.
std::vector<Device> plan_devices(const std::vector<int>& gpus, int cpu_ranks);

// fork + exec `exe` with `args` (argv[1..]), handing it `region_fd` (when >= 0) as descriptor
// kWorkerRegionFd; returns the child's pid. Throws if the fork fails; an exec failure shows as the
// child exiting with code 127.
pid_t spawn_worker(const std::string& exe, const std::vector<std::string>& args, int region_fd = -1);
// SIGKILLs every pid and waits for each (no zombies). Ignores pids already reaped (-1).
void kill_and_reap(std::vector<pid_t>& pids);
// "exited with code 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace ltx2::runtime
