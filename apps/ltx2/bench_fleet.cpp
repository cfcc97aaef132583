// `ltx2 bench fleet` and its runner "bench.stream" (see bench_fleet.h). The workers are this very
// executable re-executed, so the runner is registered here, in the app.
#include "bench_fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "runtime/controller.h"
#include "runtime/launcher.h"
#include "runtime/runner.h"

namespace ltx2 {
namespace {

using namespace ltx2::runtime;
using SteadyClock = std::chrono::steady_clock;

// Streams `count` outputs of `elems` floats from rank 0 (every rank when "all_ranks").
class StreamRunner : public Runner {
 public:
  void setup(const nlohmann::json&, const RunnerContext& ctx) override { ctx_ = ctx; }
  nlohmann::json run(const Job& job, ResultSink& out) override {
    const int count = job.params.value("count", 0);
    const int64_t elems = job.params.value("elems", 0);
    if (ctx_.rank != 0 && !job.params.value("all_ranks", false)) return nullptr;
    Tensor t = Tensor::full({elems}, static_cast<float>(ctx_.rank));
    for (int i = 0; i < count; ++i) out.output("tile", {{"index", i}}, {{"pixels", t}});
    return nullptr;
  }

 private:
  RunnerContext ctx_;
};

const bool registered = register_runner("bench.stream", [] { return std::make_unique<StreamRunner>(); });

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Runs jobs until the oldest ends; returns the tensor bytes it streamed.
size_t drain_job(Controller& c) {
  size_t bytes = 0;
  for (;;) {
    auto ev = c.next(std::chrono::seconds(60));
    LTX2_CHECK(ev.has_value(), "bench fleet: no result within 60 s");
    for (const auto& t : ev->tensors) bytes += t.tensor.nbytes();
    if (ev->kind == JobEvent::Kind::Done) return bytes;
  }
}

}  // namespace

CLI::App* add_bench_fleet_command(CLI::App* bench, BenchFleetOptions* opt) {
  auto* cmd = bench->add_subcommand("fleet",
                                    "Job dispatch latency and result-streaming throughput of a fleet "
                                    "of CPU ranks through shared memory");
  auto* gpus = cmd->add_option("--gpus", opt->gpus, "GPUs to use, e.g. 0,2 (indices of the visible GPUs)");
  cmd->add_option("--ranks", opt->ranks, "CPU ranks (default 2)")
      ->check(CLI::Range(1, kMaxRanks))
      ->excludes(gpus);
  cmd->add_option("--jobs", opt->jobs, "empty jobs timed for the dispatch latency")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--tensors", opt->tensors, "tensors streamed per throughput job")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--tensor-kib", opt->tensor_kib, "size of each streamed tensor in KiB")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--json", opt->json, "Print JSON");
  return cmd;
}

int run_bench_fleet(const BenchFleetOptions& opt) {
  FleetOptions fo;
  fo.devices = opt.gpus.empty() ? plan_devices({}, opt.ranks > 0 ? opt.ranks : 2)
                                : plan_devices(parse_gpu_list(opt.gpus), 0);
  fo.runner = "bench.stream";
  const size_t tensor_bytes = static_cast<size_t>(opt.tensor_kib) << 10;
  fo.sizes.ring_capacity = std::max<size_t>(32 << 20, 8 * tensor_bytes);
  fo.sizes.job_capacity = 1 << 20;
  fo.sizes.comm_slot_capacity = 1 << 20;
  fo.max_queued_jobs = 64;

  const auto t0 = SteadyClock::now();
  Controller c(fo);
  c.start();
  const double start_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();

  // Dispatch latency: one empty job at a time, submit -> every rank's terminal seen by the driver.
  std::vector<double> round_trip_us;
  for (int i = 0; i < opt.jobs + 10; ++i) {
    const auto t = SteadyClock::now();
    c.submit({{"count", 0}});
    drain_job(c);
    if (i >= 10)
      round_trip_us.push_back(std::chrono::duration<double, std::micro>(SteadyClock::now() - t).count());
  }
  // Queued jobs: many empty jobs submitted at once, jobs per second.
  const int burst = std::min(opt.jobs, 64);
  auto t = SteadyClock::now();
  for (int i = 0; i < burst; ++i) c.submit({{"count", 0}});
  for (int i = 0; i < burst; ++i) drain_job(c);
  const double jobs_per_s = burst / std::chrono::duration<double>(SteadyClock::now() - t).count();

  // Streaming: rank 0 alone, then every rank at once.
  const int64_t elems = static_cast<int64_t>(tensor_bytes / 4);
  double gbps[2];
  for (int all = 0; all < 2; ++all) {
    t = SteadyClock::now();
    c.submit({{"count", opt.tensors}, {"elems", elems}, {"all_ranks", all == 1}});
    const size_t bytes = drain_job(c);
    gbps[all] =
        static_cast<double>(bytes) / 1e9 / std::chrono::duration<double>(SteadyClock::now() - t).count();
  }
  c.shutdown();

  const double p50 = percentile(round_trip_us, 0.5), p99 = percentile(round_trip_us, 0.99);
  if (opt.json) {
    nlohmann::json j = {{"ranks", fo.devices.size()},       {"start_ms", start_ms},
                        {"job_round_trip_us_p50", p50},     {"job_round_trip_us_p99", p99},
                        {"queued_jobs_per_s", jobs_per_s},  {"tensor_kib", opt.tensor_kib},
                        {"stream_rank0_gb_per_s", gbps[0]}, {"stream_all_ranks_gb_per_s", gbps[1]}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("fleet of %zu ranks (%s, ...): started in %.1f ms\n", fo.devices.size(),
                fo.devices[0].str().c_str(), start_ms);
    std::printf("job round trip (submit -> all terminals), %d jobs: p50 %.1f us, p99 %.1f us\n", opt.jobs,
                p50, p99);
    std::printf("queued empty jobs: %.0f jobs/s\n", jobs_per_s);
    std::printf("streaming %d x %d KiB tensors: rank 0 %.2f GB/s, all %zu ranks %.2f GB/s\n", opt.tensors,
                opt.tensor_kib, gbps[0], fo.devices.size(), gbps[1]);
  }
  return 0;
}

}  // namespace ltx2
