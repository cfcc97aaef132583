// SIGINT / SIGTERM (and SIGKILL) to a driver mid-job: everything stops within seconds, no process
// is left, no shared memory is left, no partial output file is left.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "fleet_support.h"
#include "support/catch.h"
#include "support/test_util.h"

namespace {

using namespace std::chrono_literals;

struct Driver {
  pid_t pid = -1;
  int out_fd = -1;
};

Driver start_driver(const std::string& output) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl("/proc/self/exe", "test_fleet", "--demo-driver", output.c_str(), "2", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Reads the driver's stdout until it says "streaming" (the job is under way) or 10 s pass.
bool wait_streaming(const Driver& d) {
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline && seen.find("streaming") == std::string::npos) {
    pollfd p{d.out_fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    const ssize_t n = read(d.out_fd, buf, sizeof(buf));
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  return seen.find("streaming") != std::string::npos;
}

// Waits up to `limit` for the driver to exit; returns its wait status (or -1 on time out).
int wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(5ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

void stop_driver_with(int sig) {
  ltx2::test::ScratchDir dir("fleet_signal");
  const std::string output = dir.file("video.bin");
  Driver d = start_driver(output);
  REQUIRE(wait_streaming(d));
  REQUIRE(std::filesystem::exists(output + ".partial"));
  const auto begin = std::chrono::steady_clock::now();
  kill(d.pid, sig);
  const int status = wait_exit(d.pid, 5s);
  close(d.out_fd);
  REQUIRE(std::chrono::steady_clock::now() - begin < 3s);
  if (sig == SIGKILL) {
    REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  } else {
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 130);
    REQUIRE_FALSE(std::filesystem::exists(output + ".partial"));
  }
  REQUIRE_FALSE(std::filesystem::exists(output));
  // The driver's fleets used its own pid in their names; none may remain.
  REQUIRE(ltx2::test::leftover_shm("ltx2t-" + std::to_string(d.pid)).empty());
  // Workers re-parented to us (we are a subreaper) would show here; the helper waits up to 1 s.
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (!ltx2::test::child_pids().empty() && std::chrono::steady_clock::now() < until) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::this_thread::sleep_for(10ms);
  }
  ltx2::test::require_clean();
}

TEST_CASE("fleet signals: SIGTERM to the driver stops everything and removes partial output") {
  stop_driver_with(SIGTERM);
}

TEST_CASE("fleet signals: SIGINT to the driver stops everything and removes partial output") {
  stop_driver_with(SIGINT);
}

TEST_CASE("fleet signals: a SIGKILLed driver takes its workers with it and leaks no shared memory") {
  stop_driver_with(SIGKILL);
}

}  // namespace
