// The fleet end to end with CPU ranks: start, jobs and streaming, the error taxonomy, recovery.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "core/cpu.h"
#include "fleet_support.h"
#include "runtime/launcher.h"
#include "support/catch.h"

namespace {

using namespace ltx2;
using namespace ltx2::runtime;
using ltx2::test::finish_job;
using ltx2::test::fleet_options;
using ltx2::test::require_clean;
using namespace std::chrono_literals;

// Whether this process has initialised the CUDA driver: cuInit opens /dev/nvidiactl (and the
// devices), which stays open. Whether libcuda.so is mapped says nothing: the CUDA libraries this
// binary links may load it without initialising anything.
bool cuda_driver_opened() {
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(fd.path(), ec);
    if (!ec && target.string().rfind("/dev/nvidia", 0) == 0) return true;
  }
  return false;
}

// Waits (at most 10 s) until a SIGKILLed child can be reaped, i.e. until waitpid(WNOHANG) would see
// its exit: its group leader is a zombie and no other thread of it is left. How soon that is after
// kill() depends on the machine's load, so a test that kills a worker and expects the driver to
// notice must wait for it rather than sleep a fixed time.
void wait_until_dead(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  for (int i = 0; i < 1000; ++i) {
    std::ifstream stat(proc + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return;  // reaped already
    const size_t paren = line.rfind(')');
    const bool zombie = paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
    std::error_code ec;
    const auto threads = std::distance(std::filesystem::directory_iterator(proc + "/task", ec),
                                       std::filesystem::directory_iterator());
    if (zombie && threads <= 1) return;
    std::this_thread::sleep_for(10ms);
  }
  FAIL("process " << pid << " did not die within 10 s of SIGKILL");
}

TEST_CASE("fleet: jobs run on every rank in order and stream their results") {
  {
    Controller c(fleet_options(3));
    c.start();
    REQUIRE(c.worker_pids().size() == 3);
    REQUIRE(ltx2::test::leftover_shm().empty());  // the name is gone even while the fleet runs

    // Several jobs queued at once run one at a time, in order.
    const uint64_t a = c.submit({}, {{"x", Tensor::from_vector({1, 2}, {2})}});
    const uint64_t b = c.submit({{"tiles", 5}, {"tile_elems", 1000}});
    const uint64_t d = c.submit({});
    REQUIRE((a < b && b < d));

    auto first = finish_job(c);
    REQUIRE(first.done);
    REQUIRE(first.done->job_id == a);
    REQUIRE(first.done->data.size() == 3);
    for (int r = 0; r < 3; ++r) {
      REQUIRE(first.done->data[r]["rank"] == r);
      REQUIRE(first.done->data[r]["sum"] == 3.0);  // [1, 2] summed over 3 ranks
    }
    int progress = 0;
    for (const auto& ev : first.events) progress += ev.kind == JobEvent::Kind::Progress;
    REQUIRE(progress == 6);  // two per rank

    auto second = finish_job(c);
    REQUIRE(second.done);
    REQUIRE(second.done->job_id == b);
    std::vector<int> tiles;
    for (const auto& ev : second.events) {
      if (ev.kind != JobEvent::Kind::Output || ev.name != "tile") continue;
      REQUIRE(ev.rank == 0);
      REQUIRE(ev.tensors.at(0).tensor.numel() == 1000);
      REQUIRE(ev.tensors.at(0).tensor.item({999}) == static_cast<float>(ev.data["index"].get<int>()));
      tiles.push_back(ev.data["index"]);
    }
    REQUIRE(tiles == std::vector<int>{0, 1, 2, 3, 4});
    REQUIRE(second.done->data[2]["sum"] == 6.0);  // 1 + 2 + 3

    auto third = finish_job(c);
    REQUIRE((third.done && third.done->job_id == d));
    REQUIRE(c.unfinished_jobs() == 0);
    REQUIRE_FALSE(cuda_driver_opened());  // the driver never initialised CUDA
    c.shutdown();
    REQUIRE_FALSE(c.running());
  }
  require_clean();
}

// OMP_NUM_THREADS as the test sets it, put back as it was when the scope ends.
struct OmpThreadsEnv {
  std::optional<std::string> saved;
  OmpThreadsEnv() {
    if (const char* v = std::getenv("OMP_NUM_THREADS")) saved = v;
  }
  ~OmpThreadsEnv() { set(saved ? saved->c_str() : nullptr); }
  static void set(const char* value) {
    if (value)
      setenv("OMP_NUM_THREADS", value, 1);
    else
      unsetenv("OMP_NUM_THREADS");
  }
};

TEST_CASE("fleet: a node's ranks divide its cores among their threads, unless OMP_NUM_THREADS is set") {
  const OmpThreadsEnv restore;  // the workers inherit this process's environment
  for (const char* env : {static_cast<const char*>(nullptr), "3"}) {
    OmpThreadsEnv::set(env);
    const int expected = env ? 3 : rank_threads(machine_cores(), 2);
    Controller c(test::fleet_options(2));
    c.start();
    c.submit({});
    auto out = test::finish_job(c);
    INFO(out.error);
    REQUIRE(out.done);
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r << ", OMP_NUM_THREADS " << (env ? env : "unset"));
      CHECK(out.done->data[r]["threads"] == expected);
    }
  }
}

TEST_CASE("fleet: results stream while the job runs, through a ring smaller than the output") {
  {
    Controller c(fleet_options(2));  // 1 MiB result rings
    c.start();
    c.submit({{"tiles", 64}, {"tile_elems", 16384}});  // 64 x 64 KiB = 4 MiB from rank 0
    auto big = finish_job(c);
    REQUIRE(big.done);
    int tiles = 0;
    for (const auto& ev : big.events) {
      if (ev.kind != JobEvent::Kind::Output || ev.name != "tile") continue;
      REQUIRE(ev.data["index"] == tiles);
      REQUIRE(ev.tensors.at(0).tensor.item({16383}) == static_cast<float>(tiles));
      ++tiles;
    }
    REQUIRE(tiles == 64);

    c.submit({{"tiles", 4}, {"tile_delay_ms", 150}});
    const auto begin = std::chrono::steady_clock::now();
    double first_tile = -1, done = -1;
    while (done < 0) {
      auto ev = c.next(100ms);
      if (!ev) continue;
      const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      if (ev->kind == JobEvent::Kind::Output && ev->name == "tile" && first_tile < 0) first_tile = at;
      if (ev->kind == JobEvent::Kind::Done) done = at;
    }
    REQUIRE(done >= 0.55);
    REQUIRE(first_tile < done - 0.3);  // the first tile came while three more were still to be made
  }
  require_clean();
}

TEST_CASE("fleet: result views held by the caller stall their rank, next() says so, dropping them resumes") {
  Tensor survivor;  // a result view that outlives its fleet
  {
    auto opt = fleet_options(1);  // 1 MiB result ring
    opt.held_results_timeout = 300ms;
    Controller c(opt);
    c.start();
    c.submit({{"tiles", 40}, {"tile_elems", 16384}});  // 40 x 64 KiB, more than the ring holds
    std::vector<JobEvent> held;
    std::string stalled;
    int tiles = 0;
    const auto begin = std::chrono::steady_clock::now();
    while (stalled.empty() && std::chrono::steady_clock::now() - begin < 10s) {
      try {
        auto ev = c.next(100ms);
        if (!ev) continue;
        REQUIRE(ev->kind != JobEvent::Kind::Done);
        if (ev->kind == JobEvent::Kind::Output && ev->name == "tile") {
          REQUIRE(ev->data["index"] == tiles++);
          held.push_back(std::move(*ev));
        }
      } catch (const JobFailed&) {
        FAIL("the job must not fail");
      } catch (const FleetBroken&) {
        FAIL("the fleet must not break");
      } catch (const Error& e) {
        stalled = e.what();
      }
    }
    REQUIRE_THAT(stalled, Catch::Matchers::Contains("only result tensors you still hold can free"));
    REQUIRE((tiles >= 8 && tiles < 40));  // the ring filled up with held tiles, then the rank waited
    REQUIRE(c.running());
    held.clear();  // the rank resumes
    for (;;) {
      auto ev = c.next(5s);
      REQUIRE(ev);
      if (ev->kind == JobEvent::Kind::Done) break;
      if (ev->kind == JobEvent::Kind::Output && ev->name == "tile") {
        REQUIRE(ev->data["index"] == tiles);
        REQUIRE(ev->tensors.at(0).tensor.item({16383}) == static_cast<float>(tiles));
        survivor = ev->tensors.at(0).tensor;
        ++tiles;
      }
    }
    REQUIRE(tiles == 40);
    c.shutdown();
  }
  require_clean();  // the workers are gone and the name was never left in /dev/shm
  REQUIRE(survivor.item({0}) == 39.0f);
  REQUIRE(survivor.item({16383}) == 39.0f);
}

TEST_CASE("fleet: a bounded queue refuses jobs beyond its size") {
  {
    auto opt = fleet_options(2);
    opt.max_queued_jobs = 2;
    Controller c(opt);
    c.start();
    c.submit({});
    c.submit({});
    REQUIRE_THROWS_WITH(c.submit({}), Catch::Matchers::Contains("job queue is full"));
    REQUIRE(finish_job(c).done);
    c.submit({});  // room again
    REQUIRE(finish_job(c).done);
    REQUIRE(finish_job(c).done);
  }
  require_clean();
}

TEST_CASE("fleet: start names the rank that failed or did not come up") {
  {
    Controller c(fleet_options(3, {{"fail_setup_rank", 1}}));
    REQUIRE_THROWS_WITH(c.start(), Catch::Matchers::Contains("rank 1") &&
                                       Catch::Matchers::Contains("setup exploded on purpose"));
    REQUIRE_FALSE(c.running());
  }
  require_clean();
  {
    auto opt = fleet_options(3, {{"hang_setup_rank", 2}});
    // Long enough for the healthy ranks to come up on a loaded 2-core machine.
    opt.ready_timeout = 3000ms;
    Controller c(opt);
    const auto begin = std::chrono::steady_clock::now();
    REQUIRE_THROWS_WITH(c.start(),
                        Catch::Matchers::Contains("rank(s) 2 did not report ready within 3000 ms"));
    REQUIRE(std::chrono::steady_clock::now() - begin < 8s);
  }
  require_clean();
  // Devices no machine has (cuda:97, cuda:98): the ranks fail in setup, GPU or not.
  {
    auto opt = fleet_options(2);
    opt.devices = {Device::cuda(97), Device::cuda(98)};
    Controller c(opt);
#ifdef LTX2_WITH_NCCL
    // NCCL is the GPU engine of this build: it fails to select the device.
    REQUIRE_THROWS_WITH(c.start(),
                        Catch::Matchers::Contains("(device cuda:9") && Catch::Matchers::Contains(") exited"));
#else
    REQUIRE_THROWS_WITH(c.start(), Catch::Matchers::Contains("but this executable has no GPU communicator"));
#endif
  }
  require_clean();
  {
    auto opt = fleet_options(2);
    opt.devices = {Device::cpu(), Device::cuda(0)};
    REQUIRE_THROWS_WITH(Controller(opt),
                        "fleet: rank 0 runs on cpu and another on cuda:0: a fleet's ranks "
                        "are all CPU or all GPU");
  }
  require_clean();
  {
    auto opt = fleet_options(2);
    opt.runner = "no.such.runner";
    Controller c(opt);
    REQUIRE_THROWS_WITH(c.start(), Catch::Matchers::Contains("unknown runner 'no.such.runner'"));
  }
  require_clean();
}

TEST_CASE(
    "fleet: a worker frozen while it starts is reported after the heartbeat timeout, not the ready one") {
  {
    auto opt = fleet_options(2, {{"freeze_setup_rank", 1}});
    opt.ready_timeout = 12s;
    opt.heartbeat_timeout = 1500ms;  // longer than a worker's exec and attach on a loaded machine
    Controller c(opt);
    const auto begin = std::chrono::steady_clock::now();
    REQUIRE_THROWS_WITH(c.start(), Catch::Matchers::Contains("fleet start: rank 1 sent no heartbeat for"));
    REQUIRE(std::chrono::steady_clock::now() - begin < 8s);
    REQUIRE_FALSE(c.running());
  }
  require_clean();
}

TEST_CASE("fleet: a corrupt job record is rejected and the fleet keeps serving") {
  {
    Controller c(fleet_options(2));
    c.start();
    auto good = EncodedRecord({{"tiles", 1}}, {}).bytes();
    auto bad = good;
    bad[20] = '{';  // break the JSON header
    REQUIRE_THROWS_WITH(c.submit_record(bad), Catch::Matchers::Contains("corrupt job record"));
    std::vector<uint8_t> truncated(good.begin(), good.begin() + 10);
    REQUIRE_THROWS_WITH(c.submit_record(truncated), Catch::Matchers::Contains("corrupt job record"));
    REQUIRE(c.unfinished_jobs() == 0);
    c.submit_record(good);
    REQUIRE(finish_job(c).done);
  }
  require_clean();
}

// One pass over every failure mode on one controller; returns after checking each outcome.
void failure_round(Controller& c) {
  // The same error on every rank before any collective: a clear job error, the fleet stays up.
  c.submit({{"fail", "job_error"}});
  auto sym = finish_job(c);
  REQUIRE(sym.failed);
  REQUIRE_FALSE(sym.asymmetric);
  REQUIRE_THAT(sym.error, Catch::Matchers::Contains("prompt is empty (rejected on purpose)"));
  const auto pids = c.worker_pids();

  // An error on some ranks only (after the collective, so nobody is left waiting): asymmetric.
  c.submit({{"fail", "job_error_after_collective"}, {"fail_ranks", {1}}});
  auto asym = finish_job(c);
  REQUIRE(asym.failed);
  REQUIRE(asym.asymmetric);
  REQUIRE_THAT(asym.error, Catch::Matchers::Contains("rank(s) 1 only") &&
                               Catch::Matchers::Contains("after 1 collective(s)") &&
                               Catch::Matchers::Contains("rank 1 disagrees"));
  REQUIRE(c.worker_pids() == pids);  // same workers: nothing was restarted

  // Fatal errors: broken within a bounded time, restarted, the job retried and done.
  struct Fatal {
    nlohmann::json params;
    const char* reason;
  };
  const std::vector<Fatal> fatal{
      {{{"fail", "exception"}, {"fail_ranks", {0}}}, "unexpected failure on purpose"},
      {{{"fail", "kill"}, {"fail_ranks", {1}}}, "killed by signal 9"},
      {{{"fail", "hang_collective"}, {"fail_ranks", {1}}}, "timed out after 300 ms: rank(s) 1 never arrived"},
      {{{"fail", "stall"}}, "passed its timeout of 300 ms"},
  };
  for (const auto& f : fatal) {
    INFO(f.params.dump());
    auto params = f.params;
    params["fail_attempts"] = 1;  // the retry succeeds
    const auto before = c.worker_pids();
    c.submit(params, {}, params["fail"] == "stall" ? std::optional(300ms) : std::nullopt);
    auto out = finish_job(c, 5s);
    REQUIRE(out.done);
    REQUIRE(out.retries == 1);
    std::string reason;
    for (const auto& ev : out.events)
      if (ev.kind == JobEvent::Kind::Retry) reason = ev.data["reason"];
    INFO(reason);
    REQUIRE_THAT(reason, Catch::Matchers::Contains(f.reason));
    for (pid_t p : before) REQUIRE(kill(p, 0) != 0);  // the old workers are gone (killed and reaped)
  }
}

TEST_CASE("fleet: every failure mode, 20 times over, without a flake or a leak") {
  for (int round = 0; round < 20; ++round) {
    INFO("round " << round);
    {
      auto opt = fleet_options(2);
      opt.max_retries = 1;
      opt.sizes.job_slots = 2;
      Controller c(opt);
      c.start();
      failure_round(c);
    }
    require_clean();
  }
}

TEST_CASE("fleet: without retries a fatal error breaks the fleet and start() serves the queue again") {
  {
    Controller c(fleet_options(2));
    c.start();
    c.submit({{"fail", "kill"}, {"fail_ranks", {0}}});
    const uint64_t queued = c.submit({});
    auto out = finish_job(c);
    REQUIRE(out.broken);
    REQUIRE_THAT(out.error,
                 Catch::Matchers::Contains("rank 0") && Catch::Matchers::Contains("killed by signal 9"));
    REQUIRE_FALSE(c.running());
    REQUIRE(ltx2::test::child_pids().empty());
    REQUIRE_THROWS_WITH(c.next(10ms),
                        Catch::Matchers::Contains("not running; call start() (it broke: job 1 failed"));
    c.start();
    auto again = finish_job(c);
    REQUIRE((again.done && again.done->job_id == queued));
  }
  require_clean();
}

TEST_CASE("fleet: a worker killed while idle is noticed at the next submit, which restarts the fleet first") {
  {
    auto opt = fleet_options(2);
    opt.max_retries = 1;
    Controller c(opt);
    c.start();
    const pid_t victim = c.worker_pids()[1];
    kill(victim, SIGKILL);
    wait_until_dead(victim);
    c.submit({});
    const auto pids = c.worker_pids();
    REQUIRE(std::find(pids.begin(), pids.end(), victim) == pids.end());
    auto out = finish_job(c);
    REQUIRE(out.done);
    REQUIRE(out.retries == 0);  // the job never met the dead rank
  }
  require_clean();
}

TEST_CASE("fleet: without retries a worker killed while idle leaves the fleet stopped, saying why") {
  {
    auto opt = fleet_options(2);
    Controller c(opt);
    c.start();
    const pid_t victim = c.worker_pids()[0];
    kill(victim, SIGKILL);
    wait_until_dead(victim);
    c.submit({});
    REQUIRE_FALSE(c.running());
    REQUIRE_THROWS_WITH(c.next(1s), Catch::Matchers::Contains("it broke: rank 0"));
    c.start();  // serves the queued job on a fresh fleet
    REQUIRE(finish_job(c).done);
  }
  require_clean();
}

TEST_CASE("fleet: a fleet that breaks while idle restarts before the next job") {
  {
    auto opt = fleet_options(2);
    opt.max_retries = 1;
    Controller c(opt);
    c.start();
    c.submit({});
    auto ev = c.next(2s);  // the first event; the rest of the job stays buffered
    REQUIRE(ev.has_value());
    std::this_thread::sleep_for(50ms);  // the job finishes on every rank
    const pid_t victim = c.worker_pids()[0];
    kill(victim, SIGKILL);
    wait_until_dead(victim);
    auto rest = finish_job(c);  // delivered in full: the job was over before the rank died
    REQUIRE(rest.done);
    REQUIRE(rest.retries == 0);
    // The death is noticed by the next submit at the latest: the fleet restarts first, so the next
    // job runs on fresh ranks and needs no retry.
    c.submit({});
    const auto next = finish_job(c);
    REQUIRE(next.done);
    REQUIRE(next.retries == 0);
    REQUIRE(c.running());
    const auto pids = c.worker_pids();
    REQUIRE(std::find(pids.begin(), pids.end(), victim) == pids.end());  // a fresh fleet
  }
  require_clean();
}

TEST_CASE("fleet: a job that keeps streaming still meets its timeout") {
  {
    Controller c(fleet_options(2));
    c.start();
    c.submit({{"tiles", 100000000}}, {}, 300ms);
    auto out = finish_job(c, 3s);  // consumes the tiles as fast as they come
    REQUIRE(out.broken);
    REQUIRE_THAT(out.error, Catch::Matchers::Contains("passed its timeout of 300 ms"));
    REQUIRE(out.events.size() > 10);
    REQUIRE(out.seconds < 1.5);
  }
  require_clean();
}

TEST_CASE(
    "fleet: a rank scribbling over the layout cannot stall the driver, over its ring head it breaks the "
    "fleet") {
  {
    Controller c(fleet_options(2));  // 3 job slots
    c.start();
    const auto [base, bytes] = ltx2::test::live_fleet_region();
    const FleetChannel ch = FleetChannel::attach(base, bytes);  // where things are, before the scribbling
    ControlBlock& cb = ch.control();
    cb.world = 1000;
    cb.job_slots = 0;  // the driver used to wait for a free slot forever
    cb.setup_capacity = cb.job_capacity = cb.ring_capacity = cb.comm_slot_capacity = ~0ull;
    for (int i = 0; i < 4; ++i) {
      c.submit({{"tiles", 2}});
      REQUIRE(finish_job(c).done);
    }
    ch.ring(1)->head.fetch_add(uint64_t{1} << 40);
    c.submit({});  // sees the fleet broken first, and stops it (no retries)
    REQUIRE_FALSE(c.running());
    REQUIRE_THROWS_WITH(c.next(1s), Catch::Matchers::Contains("corrupt result ring of rank 1: 1099511627776 "
                                                              "unread bytes in a ring of 1048576"));
  }
  require_clean();
}

TEST_CASE("fleet: a job past the fleet's default job timeout fails, naming the timeout and its flag") {
  {
    auto opt = fleet_options(2);
    opt.job_timeout = 1000ms;
    Controller c(opt);
    c.start();
    c.submit({{"sleep_ms", 100}});  // well within it
    REQUIRE(finish_job(c).done);
    c.submit({{"sleep_ms", 100000}});
    auto out = finish_job(c, 4s);
    REQUIRE(out.broken);
    REQUIRE_THAT(out.error,
                 Catch::Matchers::Contains("job 2 failed: fleet broken: job 2 passed its timeout of "
                                           "1 s (--job-timeout; rank(s) 0, 1 still running)"));
    REQUIRE(out.seconds >= 0.9);
  }
  require_clean();
}

TEST_CASE("fleet: a frozen worker (no heartbeats) breaks the fleet") {
  {
    auto opt = fleet_options(2);
    opt.heartbeat_timeout = 300ms;
    Controller c(opt);
    c.start();
    c.submit({{"sleep_ms", 2000}});
    REQUIRE_FALSE(c.next(20ms).has_value());
    kill(c.worker_pids()[0], SIGSTOP);
    auto out = finish_job(c, 3s);
    REQUIRE(out.broken);
    REQUIRE_THAT(out.error, Catch::Matchers::Contains("rank 0 sent no heartbeat for"));
  }
  require_clean();
}

TEST_CASE("fleet: a rank whose working thread is stuck while its heartbeats go on breaks the fleet") {
  {
    auto opt = fleet_options(2);
    opt.progress_timeout = 500ms;
    opt.collective_timeout = 10s;  // rank 0 must not reach the point where it could blame rank 1
    Controller c(opt);
    c.start();
    c.submit({{"busy_ms", 400}});  // marking progress every 20 ms: never stuck
    REQUIRE(finish_job(c).done);
    // Rank 1 hangs as the job starts, rank 0 works on, marking progress.
    c.submit({{"fail", "stall"}, {"fail_ranks", {1}}, {"busy_ms", 3000}});
    auto out = finish_job(c, 5s);
    REQUIRE(out.broken);
    REQUIRE_THAT(out.error,
                 Catch::Matchers::Contains("rank 1 made no progress in job 2 for") &&
                     Catch::Matchers::Contains("its working thread is stuck (last: job 2: started; "
                                               "the bound is 500 ms)"));
    REQUIRE(out.seconds < 2.5);
  }
  require_clean();
}

TEST_CASE("fleet: the progress bound is a tenth of the job timeout, at least ten minutes") {
  REQUIRE(default_progress_timeout(std::nullopt) == 10min);
  REQUIRE(default_progress_timeout(1h) == 10min);
  REQUIRE(default_progress_timeout(10h) == 1h);
}

TEST_CASE("fleet: shutdown mid-job waits for the grace period, then kills") {
  {
    auto opt = fleet_options(2);
    opt.graceful_timeout = 200ms;
    Controller c(opt);
    c.start();
    c.submit({{"sleep_ms", 100000}});
    REQUIRE_FALSE(c.next(50ms).has_value());
    const auto begin = std::chrono::steady_clock::now();
    c.shutdown();
    const auto took = std::chrono::steady_clock::now() - begin;
    REQUIRE(took >= 190ms);
    REQUIRE(took < 2s);
    REQUIRE(c.unfinished_jobs() == 1);  // kept for a later start()
  }
  require_clean();
}

}  // namespace
