// The fleet's failure handling with real NCCL between GPU ranks (the runner "test.faulty" of
// tests/fleet): a worker killed while its peers are inside NCCL collectives, and a peer that never
// reaches a collective. Each time the fleet must be declared broken within a bounded time, every
// worker killed and reaped, no shared memory left, no process of ours left on a GPU, and a restart
// must serve the retried job.
#include <signal.h>

#include <algorithm>
#include <thread>

#include "fleet/fleet_support.h"
#include "multigpu_support.h"
#include "support/catch.h"

using namespace ltx2;
using namespace std::chrono_literals;

namespace {

// No pid of `ours` holds a GPU (nvidia-smi may lag the reaping a little).
void require_off_the_gpus(const std::vector<pid_t>& ours) {
  std::vector<int> left;
  for (int attempt = 0; attempt < 50; ++attempt) {
    left.clear();
    for (int pid : test::gpu_process_pids())
      if (std::find(ours.begin(), ours.end(), pid) != ours.end()) left.push_back(pid);
    if (left.empty()) return;
    std::this_thread::sleep_for(100ms);
  }
  INFO("worker pids still on a GPU: " << left.size() << " (first " << left[0] << ")");
  REQUIRE(left.empty());
}

}  // namespace

TEST_CASE("nccl fleet: collectives on every GPU, one job after another") {
  const int gpus = test::require_gpus(2);
  {
    runtime::Controller c(test::gpu_fleet_options(gpus));
    c.start();
    for (int job = 0; job < 3; ++job) {
      c.submit({{"loop_collectives", 4}, {"loop_elems", 1 << 20}});
      auto out = test::finish_job(c, 60s);
      INFO(out.error);
      REQUIRE(out.done);
      for (int r = 0; r < gpus; ++r) REQUIRE(out.done->data[r]["sum"] == gpus * (gpus + 1) / 2);
    }
  }
  test::require_clean();
}

// Rank groups over NCCL: each group's GPU communicator is bootstrapped over the group's shared
// memory on first use. Two GPUs have no cut (a group of one rank needs none); four or more have
// groups of 2 (and 4 of 8).
TEST_CASE("nccl fleet: group communicators on every GPU reach their own ranks") {
  const int gpus = test::require_gpus(2);
  {
    runtime::Controller c(test::gpu_fleet_options(gpus));
    c.start();
    const int groups = gpus / 2;
    c.submit({{"groups", groups}, {"group_loops", 4}});
    auto out = test::finish_job(c, 120s);
    INFO(out.error);
    REQUIRE(out.done);
    for (int r = 0; r < gpus; ++r) {
      INFO("rank " << r << " of " << gpus);
      const auto& d = out.done->data[r];
      if (groups < 2 || groups > 4 || gpus % groups != 0) {
        CHECK(d["group_size"] == 0);
        continue;
      }
      CHECK(d["group_size"] == 2);
      CHECK(d["group_rank"] == r % 2);
      CHECK(d["group_sum"] == (r / 2 * 2 + 1) + (r / 2 * 2 + 2));  // x is [rank + 1]
    }
  }
  test::require_clean();
}

TEST_CASE("nccl fleet: a worker killed mid-collective breaks the fleet, the retry runs on a fresh one") {
  const int gpus = test::require_gpus(2);
  std::vector<pid_t> spawned;
  {
    auto opt = test::gpu_fleet_options(gpus);
    opt.max_retries = 1;
    runtime::Controller c(opt);
    c.start();
    spawned = c.worker_pids();
    // 64 MiB all-reduces, long enough that rank 0 is inside one when rank 1 dies.
    c.submit({{"loop_collectives", 400}, {"loop_elems", 16 << 20}});
    for (;;) {
      auto ev = c.next(60s);
      REQUIRE(ev.has_value());
      if (ev->kind == runtime::JobEvent::Kind::Progress && ev->name == "loop") break;
    }
    const auto killed_at = std::chrono::steady_clock::now();
    kill(spawned[1], SIGKILL);
    auto out = test::finish_job(c, 180s);
    INFO(out.error);
    REQUIRE(out.retries == 1);
    REQUIRE(out.done);  // the retry, on restarted workers
    for (int r = 0; r < gpus; ++r) REQUIRE(out.done->data[r]["sum"] == gpus * (gpus + 1) / 2);
    bool noticed = false;
    for (const auto& ev : out.events)
      if (ev.kind == runtime::JobEvent::Kind::Retry) {
        noticed = true;
        INFO(ev.data.dump());
        REQUIRE(ev.data["reason"].get<std::string>().find("rank 1") != std::string::npos);
      }
    REQUIRE(noticed);
    for (pid_t pid : c.worker_pids())
      REQUIRE(std::find(spawned.begin(), spawned.end(), pid) == spawned.end());
    const auto fresh = c.worker_pids();
    spawned.insert(spawned.end(), fresh.begin(), fresh.end());
    INFO("seconds from the kill to the retried job's end: "
         << std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count());
  }
  test::require_clean();
  require_off_the_gpus(spawned);
}

TEST_CASE("nccl fleet: a peer that never reaches the collective times out and the fleet is torn down") {
  const int gpus = test::require_gpus(2);
  std::vector<pid_t> spawned;
  {
    runtime::Controller c(test::gpu_fleet_options(gpus));
    c.start();
    spawned = c.worker_pids();
    c.submit({{"fail", "hang_collective"}, {"fail_ranks", {1}}});
    const auto start = std::chrono::steady_clock::now();
    auto out = test::finish_job(c, 60s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(out.error << " after " << seconds << " s");
    REQUIRE(out.broken);
    REQUIRE(seconds < 30);  // the 5 s collective timeout plus the teardown
    REQUIRE_FALSE(c.running());
    c.start();  // the fleet comes back for the next job
    c.submit({});
    REQUIRE(test::finish_job(c, 60s).done);
    const auto fresh = c.worker_pids();
    spawned.insert(spawned.end(), fresh.begin(), fresh.end());
  }
  test::require_clean();
  require_off_the_gpus(spawned);
}
