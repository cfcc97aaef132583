// "test.faulty": a runner that fails on purpose in the ways a real one can, chosen per job.
//
// setup config: {"fail_setup_rank": r} throws during setup on rank r; {"hang_setup_rank": r}
// never finishes setup on rank r; {"freeze_setup_rank": r} stops rank r (SIGSTOP: every thread,
// heartbeats included) during setup.
// job params:
//   "fail": "job_error" | "exception" | "kill" | "hang_collective" | "stall" (never returns, outside
//           any collective) | "job_error_after_collective"
//   "fail_ranks": [ranks] (default: every rank), "fail_attempts": n (fail only while attempt < n)
//   "sleep_ms": every rank sleeps this long first (job timeout tests)
//   "busy_ms": every rank works this long first, marking progress every 20 ms (liveness tests)
//   "tiles": n, "tile_elems": m, "tile_delay_ms": d — rank 0 streams n outputs of m floats
//   "loop_collectives": n, "loop_elems": m — first n all-reduces of m floats on the rank's device,
//           a progress event ("loop") after the first (so a test can kill a rank mid-collective)
//   "groups": g — after the sum, every rank also all-reduces x over its group of the cut into g
//           groups (comm_groups.h; "group_loops": n such all-reduces first on attempts below
//           "group_loop_attempts" (default all), a progress event ("group loop") after the first)
//           and returns "group_rank", "group_size" and "group_sum"
//           (group_size 0: the fleet has no such cut)
// Every rank all-reduces the input tensor "x" (default: [rank + 1] * 4) and returns
// {"rank", "sum": first element of the sum, "threads": its OpenMP pool's size}.
#include <omp.h>
#include <signal.h>

#include <thread>

#include "runtime/runner.h"

namespace {

using namespace ltx2;
using namespace ltx2::runtime;

class FaultyRunner : public Runner {
 public:
  void setup(const nlohmann::json& config, const RunnerContext& ctx) override {
    ctx_ = ctx;
    if (config.value("fail_setup_rank", -1) == ctx.rank)
      throw std::runtime_error("setup exploded on purpose");
    if (config.value("hang_setup_rank", -1) == ctx.rank) hang();
    if (config.value("freeze_setup_rank", -1) == ctx.rank) raise(SIGSTOP);
  }

  nlohmann::json run(const Job& job, ResultSink& out) override {
    const auto& p = job.params;
    const std::string fail = p.value("fail", "");
    bool mine = !fail.empty() && job.attempt < p.value("fail_attempts", 1000ull);
    if (p.contains("fail_ranks")) {
      bool listed = false;
      for (int r : p["fail_ranks"]) listed = listed || r == ctx_.rank;
      mine = mine && listed;
    }
    if (mine && fail == "job_error") LTX2_JOB_CHECK(false, "prompt is empty (rejected on purpose)");
    if (mine && fail == "exception") throw std::logic_error("unexpected failure on purpose");
    if (mine && fail == "kill") raise(SIGKILL);
    if (mine && (fail == "hang_collective" || fail == "stall")) hang();
    if (p.contains("sleep_ms"))
      std::this_thread::sleep_for(std::chrono::milliseconds(p["sleep_ms"].get<int>()));
    for (int ms = 0; ms < p.value("busy_ms", 0); ms += 20) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      out.mark_progress("busy " + std::to_string(ms));
    }

    out.progress("reduce", 0.0);
    bool has_x = false;
    for (const auto& t : job.tensors) has_x = has_x || t.name == "x";
    Tensor x = has_x ? job.tensor("x") : Tensor::full({4}, static_cast<float>(ctx_.rank + 1));
    const int loops = p.value("loop_collectives", 0);
    if (loops > 0) {
      const Tensor big =
          Tensor::full({p.value("loop_elems", int64_t{1} << 20)}, 1.f, DType::F32, ctx_.device);
      for (int i = 0; i < loops; ++i) {
        ctx_.comm->all_reduce_sum(big);
        if (i == 0) out.progress("loop", 0.0);
      }
    }
    // GPU ranks reduce on their device; the results travel from the host.
    Tensor sum = ctx_.comm->all_reduce_sum(x).to(Device::cpu());
    if (mine && fail == "job_error_after_collective") LTX2_JOB_CHECK(false, "rank {} disagrees", ctx_.rank);

    const int tiles = p.value("tiles", 0);
    const int64_t elems = p.value("tile_elems", 16);
    for (int i = 0; ctx_.rank == 0 && i < tiles; ++i) {
      if (p.contains("tile_delay_ms"))
        std::this_thread::sleep_for(std::chrono::milliseconds(p["tile_delay_ms"].get<int>()));
      out.output("tile", {{"index", i}}, {{"pixels", Tensor::full({elems}, static_cast<float>(i))}});
    }
    if (ctx_.rank == 0) out.output("sum", {}, {{"sum", sum}});
    nlohmann::json result = {{"rank", ctx_.rank}, {"sum", sum.item({0})}, {"threads", omp_get_max_threads()}};
    if (p.contains("groups")) {
      comm::Communicator* group = ctx_.groups->split(p["groups"].get<int>());
      result["group_size"] = group ? group->world_size() : 0;
      if (group) {
        const bool loop = job.attempt < p.value("group_loop_attempts", 1000ull);
        for (int i = 0; loop && i < p.value("group_loops", 0); ++i) {
          group->all_reduce_sum(Tensor::full({1 << 16}, 1.f, DType::F32, ctx_.device));
          if (i == 0) out.progress("group loop", 0.0);
        }
        result["group_rank"] = group->rank();
        result["group_sum"] = group->all_reduce_sum(x).to(Device::cpu()).item({0});
      }
    }
    out.progress("reduce", 1.0);
    return result;
  }

 private:
  [[noreturn]] static void hang() {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  RunnerContext ctx_;
};

const bool registered = register_runner("test.faulty", [] { return std::make_unique<FaultyRunner>(); });

}  // namespace
