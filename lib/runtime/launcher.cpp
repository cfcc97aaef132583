// Device planning and worker process start/stop (see launcher.h).
#include "runtime/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/error.h"
#include "runtime/shm_region.h"

namespace ltx2::runtime {

std::vector<int> parse_gpu_list(const std::string& text) {
  std::vector<int> out;
  std::set<int> seen;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    LTX2_CHECK(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos && item.size() < 6,
               "--gpus: '{}' is not a GPU index (expected a list like 0,2)", item);
    const int g = std::stoi(item);
    LTX2_CHECK(seen.insert(g).second, "--gpus: GPU {} is listed twice", g);
    out.push_back(g);
  }
  LTX2_CHECK(!out.empty(), "--gpus: empty list");
  return out;
}

int visible_gpu_count() {
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) {
    int n = 0;
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item.empty() || item[0] == '-') break;  // CUDA stops at the first invalid entry
      ++n;
    }
    return n;
  }
  std::error_code ec;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    ++n;
  }
  return n;
}

std::vector<Device> plan_devices(const std::vector<int>& gpus, int cpu_ranks) {
  std::vector<Device> out;
  LTX2_CHECK(cpu_ranks >= 0, "--ranks {} must not be negative", cpu_ranks);
  if (cpu_ranks > 0) {
    LTX2_CHECK(gpus.empty(), "--ranks and --gpus cannot be combined");
    for (int r = 0; r < cpu_ranks; ++r) out.push_back(Device::cpu());
    return out;
  }
  const int visible = visible_gpu_count();
  if (gpus.empty()) {
    LTX2_CHECK(visible > 0,
               "no GPU is visible (CUDA_VISIBLE_DEVICES or driver); use --ranks N for CPU ranks");
    for (int g = 0; g < visible; ++g) out.push_back(Device::cuda(g));
    return out;
  }
  for (int g : gpus) {
    LTX2_CHECK(g >= 0 && g < visible, "--gpus: GPU {} is not visible ({} visible)", g, visible);
    out.push_back(Device::cuda(g));
  }
  return out;
}

pid_t spawn_worker(const std::string& exe, const std::vector<std::string>& args, int region_fd) {
  // Everything the child needs is built before fork: between fork and exec only async-signal-safe
  // calls are allowed (the driver may have other threads).
  std::vector<std::string> all{exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  LTX2_CHECK(pid >= 0, "fleet: fork failed: {}", std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the driver died before prctl took effect
    if (region_fd == kWorkerRegionFd) {
      fcntl(region_fd, F_SETFD, 0);  // keep it across exec
    } else if (region_fd >= 0 && dup2(region_fd, kWorkerRegionFd) < 0) {
      _exit(126);
    }
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

void kill_and_reap(std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (p > 0) kill(p, SIGKILL);
  for (pid_t& p : pids) {
    if (p <= 0) continue;
    int status = 0;
    while (waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
    p = -1;
  }
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "stopped (status " + std::to_string(status) + ")";
}

}  // namespace ltx2::runtime
