// `ltx2 bench fleet` and its runner "bench.stream" (see bench_fleet.h). The workers are this very
// executable re-executed, so the runner is registered here, in the app.
//
// Streaming is timed from submit() to the job's Done event on the driver, for three consumers:
// "view" drops each zero-copy result view at once (the worker's one copy into the ring is all the
// work), "copy" clones each result into fresh driver memory first (what a driver that copies results
// out of the ring pays), and "all ranks" has every rank stream at once (views).
#include "bench_fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "runtime/controller.h"
#include "runtime/launcher.h"
#include "runtime/runner.h"

namespace ltx2 {
namespace {

using namespace ltx2::runtime;
using SteadyClock = std::chrono::steady_clock;

// Streams `count` outputs of `elems` floats from rank 0 (every rank when "all_ranks"). The tensor
// is made once per size, outside the timed jobs' work.
class StreamRunner : public Runner {
 public:
  void setup(const nlohmann::json&, const RunnerContext& ctx) override { ctx_ = ctx; }
  nlohmann::json run(const Job& job, ResultSink& out) override {
    const int count = job.params.value("count", 0);
    const int64_t elems = job.params.value("elems", 0);
    if (ctx_.rank != 0 && !job.params.value("all_ranks", false)) return nullptr;
    if (!tile_.defined() || tile_.numel() != elems)
      tile_ = Tensor::full({elems}, static_cast<float>(ctx_.rank));
    for (int i = 0; i < count; ++i) out.output("tile", {{"index", i}}, {{"pixels", tile_}});
    return nullptr;
  }

 private:
  RunnerContext ctx_;
  Tensor tile_;
};

const bool registered = register_runner("bench.stream", [] { return std::make_unique<StreamRunner>(); });

double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// CPU seconds this (driver) process has used; the workers are other processes.
double driver_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Runs the oldest job to its end; returns the tensor bytes it streamed. With `copy` every result
// tensor is first copied into fresh memory, else the views are dropped at once.
size_t drain_job(Controller& c, bool copy = false) {
  size_t bytes = 0;
  for (;;) {
    auto ev = c.next(std::chrono::seconds(60));
    LTX2_CHECK(ev.has_value(), "bench fleet: no result within 60 s");
    for (const auto& t : ev->tensors) {
      bytes += t.tensor.nbytes();
      if (copy) (void)t.tensor.clone();
    }
    if (ev->kind == JobEvent::Kind::Done) return bytes;
  }
}

struct Rate {
  double median = 0, best = 0;  // GB/s over the repeats
  double driver_cpu = 0;        // median share of one core the driver used while streaming
};

// Runs `measure` (returns GB/s) `times` times.
template <typename F>
Rate repeat(int times, F&& measure) {
  std::vector<double> v, cpu;
  for (int i = 0; i < times; ++i) {
    const double c0 = driver_cpu_seconds();
    const auto t = SteadyClock::now();
    v.push_back(measure());
    cpu.push_back((driver_cpu_seconds() - c0) / seconds_since(t));
  }
  return {percentile(v, 0.5), *std::max_element(v.begin(), v.end()), percentile(cpu, 0.5)};
}

// memcpy between two buffers of `bytes` already touched, `count` times: the ceiling for one copy.
double memcpy_gb_per_s(size_t bytes, int count) {
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  const auto t = SteadyClock::now();
  for (int i = 0; i < count; ++i) {
    src[static_cast<size_t>(i) % bytes] = static_cast<uint8_t>(i);
    std::memcpy(dst.data(), src.data(), bytes);
  }
  const double s = seconds_since(t);
  LTX2_CHECK(dst[0] == src[0], "bench fleet: memcpy check");
  return static_cast<double>(bytes) * count / 1e9 / s;
}

FleetOptions fleet_options(const BenchFleetOptions& opt, size_t tensor_bytes) {
  FleetOptions fo;
  fo.devices = opt.gpus.empty() ? plan_devices({}, opt.ranks > 0 ? opt.ranks : 2)
                                : plan_devices(parse_gpu_list(opt.gpus), 0);
  fo.runner = "bench.stream";
  // Room for four results in flight (a frame must fit in half the ring).
  fo.sizes.ring_capacity = std::max<size_t>(32 << 20, 4 * (tensor_bytes + (64 << 10)));
  fo.sizes.job_capacity = 1 << 20;
  fo.sizes.comm_slot_capacity = 1 << 20;
  fo.max_queued_jobs = 64;
  return fo;
}

struct SizeResult {
  int mib = 0, count = 0;
  Rate memcpy_rate, view, copy, all_ranks;
};

SizeResult bench_size(const BenchFleetOptions& opt, int mib) {
  const size_t bytes = static_cast<size_t>(mib) << 20;
  SizeResult r;
  r.mib = mib;
  r.count = std::max(4, opt.stream_mib / mib);
  r.memcpy_rate = repeat(opt.repeats, [&] { return memcpy_gb_per_s(bytes, r.count); });
  Controller c(fleet_options(opt, bytes));
  c.start();
  const int64_t elems = static_cast<int64_t>(bytes / 4);
  const auto stream = [&](bool all_ranks, bool copy) {
    const auto t = SteadyClock::now();
    c.submit({{"count", r.count}, {"elems", elems}, {"all_ranks", all_ranks}});
    const size_t got = drain_job(c, copy);
    return static_cast<double>(got) / 1e9 / seconds_since(t);
  };
  c.submit({{"count", 1}, {"elems", elems}, {"all_ranks", true}});  // warm-up: every rank makes its tensor
  drain_job(c);
  r.view = repeat(opt.repeats, [&] { return stream(false, false); });
  r.copy = repeat(opt.repeats, [&] { return stream(false, true); });
  r.all_ranks = repeat(opt.repeats, [&] { return stream(true, false); });
  c.shutdown();
  return r;
}

}  // namespace

CLI::App* add_bench_fleet_command(CLI::App* bench, BenchFleetOptions* opt) {
  auto* cmd = bench->add_subcommand("fleet",
                                    "Job dispatch latency and result-streaming throughput of a fleet "
                                    "of CPU ranks through shared memory, with memcpy as the ceiling");
  auto* gpus = cmd->add_option("--gpus", opt->gpus, "GPUs to use, e.g. 0,2 (indices of the visible GPUs)");
  cmd->add_option("--ranks", opt->ranks, "CPU ranks (default 2)")
      ->check(CLI::Range(1, kMaxRanks))
      ->excludes(gpus);
  cmd->add_option("--jobs", opt->jobs, "empty jobs timed for the dispatch latency")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--sizes-mib", opt->sizes_mib, "streamed tensor sizes in MiB (default 1 4 16 64 256)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--stream-mib", opt->stream_mib, "MiB streamed per measurement (at least 4 tensors)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--repeats", opt->repeats, "times each measurement runs (median and best reported)")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--json", opt->json, "Print JSON");
  return cmd;
}

int run_bench_fleet(const BenchFleetOptions& opt) {
  FleetOptions fo = fleet_options(opt, 0);
  const auto t0 = SteadyClock::now();
  Controller c(fo);
  c.start();
  const double start_ms = seconds_since(t0) * 1e3;

  // Dispatch latency: one empty job at a time, submit -> every rank's terminal seen by the driver.
  std::vector<double> round_trip_us;
  for (int i = 0; i < opt.jobs + 10; ++i) {
    const auto t = SteadyClock::now();
    c.submit({{"count", 0}});
    drain_job(c);
    if (i >= 10) round_trip_us.push_back(seconds_since(t) * 1e6);
  }
  // Queued jobs: many empty jobs submitted at once, jobs per second.
  const int burst = std::min(opt.jobs, 64);
  const auto t = SteadyClock::now();
  for (int i = 0; i < burst; ++i) c.submit({{"count", 0}});
  for (int i = 0; i < burst; ++i) drain_job(c);
  const double jobs_per_s = burst / seconds_since(t);
  c.shutdown();

  std::vector<SizeResult> sizes;
  for (int mib : opt.sizes_mib) sizes.push_back(bench_size(opt, mib));

  const double p50 = percentile(round_trip_us, 0.5), p99 = percentile(round_trip_us, 0.99);
  if (opt.json) {
    nlohmann::json rows = nlohmann::json::array();
    const auto rate = [](const Rate& x) {
      return nlohmann::json{{"median", x.median}, {"best", x.best}, {"driver_cpu", x.driver_cpu}};
    };
    for (const auto& s : sizes)
      rows.push_back({{"tensor_mib", s.mib},
                      {"tensors", s.count},
                      {"memcpy_gb_per_s", rate(s.memcpy_rate)},
                      {"stream_view_gb_per_s", rate(s.view)},
                      {"stream_copy_gb_per_s", rate(s.copy)},
                      {"stream_all_ranks_gb_per_s", rate(s.all_ranks)}});
    nlohmann::json j = {{"ranks", fo.devices.size()},
                        {"start_ms", start_ms},
                        {"job_round_trip_us_p50", p50},
                        {"job_round_trip_us_p99", p99},
                        {"queued_jobs_per_s", jobs_per_s},
                        {"repeats", opt.repeats},
                        {"streaming", rows}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("fleet of %zu ranks (%s, ...): started in %.1f ms\n", fo.devices.size(),
              fo.devices[0].str().c_str(), start_ms);
  std::printf("job round trip (submit -> all terminals), %d jobs: p50 %.1f us, p99 %.1f us\n", opt.jobs, p50,
              p99);
  std::printf("queued empty jobs: %.0f jobs/s\n", jobs_per_s);
  std::printf(
      "streaming (GB/s, median / best of %d; driver CPU: median share of a core): view = rank 0 "
      "to zero-copy result views, copy = rank 0, the driver copies each result out, all = every "
      "rank to views\n",
      opt.repeats);
  std::printf("%9s %6s %15s %15s %15s %15s %14s\n", "tensor", "count", "memcpy", "view", "copy", "all",
              "driver CPU v/c");
  const auto cell = [](const Rate& x) { return fmt::format("{:6.2f} / {:6.2f}", x.median, x.best); };
  for (const auto& s : sizes)
    std::printf("%5d MiB %6d %15s %15s %15s %15s %6.0f%% / %3.0f%%\n", s.mib, s.count,
                cell(s.memcpy_rate).c_str(), cell(s.view).c_str(), cell(s.copy).c_str(),
                cell(s.all_ranks).c_str(), 100 * s.view.driver_cpu, 100 * s.copy.driver_cpu);
  return 0;
}

}  // namespace ltx2
