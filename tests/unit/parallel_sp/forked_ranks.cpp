// Forked CPU ranks over a shared-memory communicator (see forked_ranks.h).
#include "forked_ranks.h"

#include <fmt/format.h>
#include <omp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "comm/shm_comm_set.h"
#include "io/safetensors.h"
#include "runtime/shm_region.h"
#include "support/test_util.h"

namespace ltx2::test {

namespace {

using comm::ShmCommunicator;

constexpr size_t kSlotBytes = size_t{1} << 20;

std::string tensors_file(const ScratchDir& dir, int rank) {
  return dir.file(fmt::format("rank{}.safetensors", rank));
}
std::string error_file(const ScratchDir& dir, int rank) {
  return dir.file(fmt::format("rank{}.error", rank));
}

// The child's whole life: never returns, never unwinds into the parent's code.
[[noreturn]] void run_child(const GroupedRankBody& body, void* block, const comm::ShmCommSet& set, int rank,
                            std::chrono::milliseconds timeout, const ScratchDir& dir) {
  int code = 0;
  try {
    omp_set_num_threads(1);
    ShmCommunicator comm(block, set.world_region().bytes, rank, timeout);
    comm::ShmCommGroups groups(block, set, rank, timeout);
    const RankTensors out = body(comm, groups);
    write_safetensors(tensors_file(dir, rank), {out.begin(), out.end()});
  } catch (const std::exception& e) {
    set.abort(block, fmt::format("rank {} failed", rank));  // release the peers now
    std::ofstream(error_file(dir, rank)) << e.what();
    code = 1;
  } catch (...) {
    code = 2;
  }
  _exit(code);
}

// Waits for every child until the deadline, then kills and reaps the rest; returns wait statuses.
std::vector<int> reap(const std::vector<pid_t>& pids, std::chrono::steady_clock::time_point deadline) {
  std::vector<int> status(pids.size(), -1);
  std::vector<bool> done(pids.size(), false);
  for (size_t left = pids.size(); left > 0;) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      const bool late = std::chrono::steady_clock::now() > deadline;
      if (late) kill(pids[i], SIGKILL);
      if (waitpid(pids[i], &status[i], late ? 0 : WNOHANG) == pids[i]) {
        done[i] = true;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return status;
}

}  // namespace

std::vector<RankResult> run_forked_ranks(int world, const RankBody& body, std::chrono::milliseconds timeout) {
  return run_forked_grouped_ranks(
      world, [&body](comm::Communicator& comm, comm::CommGroups&) { return body(comm); }, timeout);
}

std::vector<RankResult> run_forked_grouped_ranks(int world, const GroupedRankBody& body,
                                                 std::chrono::milliseconds timeout) {
  static std::atomic<int> counter{0};
  ScratchDir dir(fmt::format("sp_ranks_{}", counter.load()));
  const comm::ShmCommSet set(world, kSlotBytes, world);
  runtime::ShmRegion region =
      runtime::ShmRegion::create(fmt::format("/ltx2_sp_test_{}_{}", getpid(), counter++), set.bytes());
  // create() removed the name already; the children inherit the mapping through fork.
  set.format(region.data());

  std::fflush(nullptr);
  std::vector<pid_t> pids;
  std::vector<RankResult> results(world);
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    if (pid == 0) run_child(body, region.data(), set, r, timeout, dir);
    if (pid < 0) {
      set.abort(region.data(), "fork failed");
      for (int q = r; q < world; ++q) results[q].error = "fork failed";
      break;
    }
    pids.push_back(pid);
  }
  const std::vector<int> status =
      reap(pids, std::chrono::steady_clock::now() + timeout + std::chrono::seconds(10));

  for (size_t r = 0; r < pids.size(); ++r) {
    RankResult& out = results[r];
    if (std::filesystem::exists(error_file(dir, static_cast<int>(r)))) {
      std::ostringstream text;
      text << std::ifstream(error_file(dir, static_cast<int>(r))).rdbuf();
      out.error = text.str();
    } else if (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]) != 0) {
      out.error = fmt::format("rank {} ended with wait status {}", r, status[r]);
    } else {
      auto file = SafetensorsFile::open(tensors_file(dir, static_cast<int>(r)));
      for (const TensorInfo& info : file->tensors()) out.tensors[info.name] = file->tensor(info.name).clone();
    }
  }
  return results;
}

}  // namespace ltx2::test
