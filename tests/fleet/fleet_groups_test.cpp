// Rank groups in a real fleet of CPU worker processes (comm_groups.h through RunnerContext::groups):
// each group's collectives reach its own consecutive ranks, a cut the fleet has not prepared is
// none, and a worker killed inside a group's collective breaks the fleet, whose retry runs on fresh
// workers with the groups made again.
#include <signal.h>

#include <algorithm>

#include "fleet_support.h"
#include "support/catch.h"

using namespace ltx2;
using namespace ltx2::runtime;
using namespace std::chrono_literals;

TEST_CASE("fleet groups: a group's collectives reach its own ranks, job after job") {
  {
    Controller c(test::fleet_options(4));
    c.start();
    for (int job = 0; job < 2; ++job) {
      c.submit({{"groups", 2}});
      auto out = test::finish_job(c);
      INFO(out.error);
      REQUIRE(out.done);
      for (int r = 0; r < 4; ++r) {
        INFO("rank " << r);
        const auto& d = out.done->data[r];
        CHECK(d["sum"] == 10);
        CHECK(d["group_size"] == 2);
        CHECK(d["group_rank"] == r % 2);
        CHECK(d["group_sum"] == (r < 2 ? 1 + 2 : 3 + 4));  // x is [rank + 1]
      }
    }
    c.submit({{"groups", 3}});  // 3 groups do not divide 4 ranks
    auto out = test::finish_job(c);
    REQUIRE(out.done);
    for (int r = 0; r < 4; ++r) CHECK(out.done->data[r]["group_size"] == 0);
  }
  test::require_clean();
}

TEST_CASE("fleet groups: a worker killed inside its group's collective breaks the fleet, the retry runs") {
  {
    auto opt = test::fleet_options(4);
    opt.max_retries = 1;
    opt.collective_timeout = 30s;  // released by the teardown, not by a timeout
    Controller c(opt);
    c.start();
    const auto spawned = c.worker_pids();
    c.submit({{"groups", 2}, {"group_loops", 1000000}, {"group_loop_attempts", 1}});
    for (;;) {
      auto ev = c.next(10s);
      REQUIRE(ev.has_value());
      if (ev->kind == JobEvent::Kind::Progress && ev->name == "group loop") break;
    }
    const auto killed_at = std::chrono::steady_clock::now();
    kill(spawned[3], SIGKILL);
    auto out = test::finish_job(c, 20s);
    INFO(out.error);
    REQUIRE(out.retries == 1);
    REQUIRE(out.done);
    for (int r = 0; r < 4; ++r) CHECK(out.done->data[r]["group_sum"] == (r < 2 ? 3 : 7));
    std::string reason;
    for (const auto& ev : out.events)
      if (ev.kind == JobEvent::Kind::Retry) reason = ev.data["reason"];
    CHECK_THAT(reason, Catch::Matchers::Contains("rank 3"));
    for (pid_t pid : c.worker_pids()) CHECK(std::find(spawned.begin(), spawned.end(), pid) == spawned.end());
    INFO("seconds from the kill to the retried job's end: "
         << std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count());
  }
  test::require_clean();
}
