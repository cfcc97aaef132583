// `ltx2 bench sp --all-to-all` and its runner "bench.all_to_all" (see bench_all_to_all.h). Every
// rank times `iterations` all-to-alls of each size after `warmup` ones, from a barrier to the last
// result on the host (so a GPU rank's time covers the device's work), and returns its seconds.
#include "bench_all_to_all.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include "bench_job.h"
#include "core/error.h"
#include "runtime/controller.h"
#include "runtime/launcher.h"
#include "runtime/runner.h"

namespace ltx2 {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr double kNvlinkBusGBps = 370.0;  // nccl-tests' all-to-all busbw on NVLink 4 (H100/H200)

class BenchAllToAllRunner : public runtime::Runner {
 public:
  void setup(const json&, const runtime::RunnerContext& ctx) override { ctx_ = ctx; }

  json run(const runtime::Job& job, runtime::ResultSink& out) override {
    comm::Communicator& comm = *ctx_.comm;
    const int P = comm.world_size();
    const int warmup = job.params.at("warmup"), iterations = job.params.at("iterations");
    json seconds = json::array();
    for (const int64_t bytes : job.params.at("sizes").get<std::vector<int64_t>>()) {
      out.mark_progress(fmt::format("all_to_all of {} bytes", bytes));  // the fleet's liveness check
      const int64_t per_peer = bytes / 4 / P;
      const std::vector<int64_t> counts(P, per_peer);
      const Tensor send =
          Tensor::full({per_peer * P}, static_cast<float>(ctx_.rank), DType::F32, ctx_.device);
      Tensor got;
      for (int i = 0; i < warmup; ++i) got = comm.all_to_all(send, counts, counts);
      comm.barrier();
      const auto start = SteadyClock::now();
      for (int i = 0; i < iterations; ++i) got = comm.all_to_all(send, counts, counts);
      comm.synchronize();
      // The last block came from the last rank: reading it waits for the device and checks it.
      const float last = got.narrow(0, (P - 1) * per_peer, 1).to(Device::cpu()).item({0});
      seconds.push_back(std::chrono::duration<double>(SteadyClock::now() - start).count() / iterations);
      LTX2_CHECK(last == static_cast<float>(P - 1), "bench all_to_all: rank {} received {} from rank {}",
                 ctx_.rank, last, P - 1);
    }
    return seconds;
  }

 private:
  runtime::RunnerContext ctx_;
};

const bool registered =
    runtime::register_runner("bench.all_to_all", [] { return std::make_unique<BenchAllToAllRunner>(); });

}  // namespace

std::vector<int64_t> all_to_all_sizes(int64_t min_bytes, int64_t max_bytes, int ranks) {
  const int64_t unit = int64_t{4} * ranks;  // one float32 to every rank
  std::vector<int64_t> sizes;
  for (int64_t b = std::max<int64_t>(min_bytes, 1); b <= max_bytes; b *= 2)
    sizes.push_back(std::max(unit, b / unit * unit));
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

int run_bench_all_to_all(const BenchSpOptions& opt) {
  runtime::FleetOptions fo;
  fo.devices =
      runtime::plan_devices(opt.gpus.empty() ? std::vector<int>{} : runtime::parse_gpu_list(opt.gpus),
                            opt.gpus.empty() ? opt.ranks : 0);
  const int P = static_cast<int>(fo.devices.size());
  LTX2_CHECK(opt.min_bytes <= opt.max_bytes, "--min-bytes {} exceeds --max-bytes {}", opt.min_bytes,
             opt.max_bytes);
  const std::vector<int64_t> sizes = all_to_all_sizes(opt.min_bytes, opt.max_bytes, P);
  fo.runner = "bench.all_to_all";
  runtime::Controller c(fo);
  c.start();
  const json per_rank =
      run_bench_job(c, {{"sizes", sizes}, {"warmup", opt.warmup}, {"iterations", opt.iterations}},
                    std::chrono::minutes(30), "bench all_to_all");
  c.shutdown();

  const bool gpu = fo.devices[0].is_cuda();
  std::printf("all_to_all on %d %s (%s), float32, %d iterations after %d warm-up\n", P,
              gpu ? "GPU ranks" : "CPU ranks", gpu ? "NCCL" : "shared memory", opt.iterations, opt.warmup);
  std::printf("size: bytes each rank sends (to itself included); time: the slowest rank's, per collective\n");
  std::printf("busbw = algbw x (P-1)/P (nccl-tests' alltoall); NVLink 4 reaches about %.0f GB/s busbw\n",
              kNvlinkBusGBps);
  std::printf("%14s %12s %12s %12s %10s\n", "size B", "time us", "algbw GB/s", "busbw GB/s", "/370");
  json rows = json::array();
  for (size_t i = 0; i < sizes.size(); ++i) {
    double t = 0;
    for (const json& r : per_rank) t = std::max(t, r.at(i).get<double>());
    const double algbw = static_cast<double>(sizes[i]) / t / 1e9, busbw = algbw * (P - 1) / P;
    std::printf("%14lld %12.1f %12.2f %12.2f %9.1f%%\n", static_cast<long long>(sizes[i]), t * 1e6, algbw,
                busbw, 100.0 * busbw / kNvlinkBusGBps);
    rows.push_back({{"bytes", sizes[i]}, {"us", t * 1e6}, {"algbw_gbps", algbw}, {"busbw_gbps", busbw}});
  }
  if (!opt.json.empty()) {
    std::ofstream f(opt.json);
    LTX2_CHECK(f.good(), "ltx2 bench sp: cannot write --json file '{}'", opt.json);
    f << json{{"ranks", P}, {"device", gpu ? "cuda" : "cpu"}, {"iterations", opt.iterations}, {"rows", rows}}
             .dump(2)
      << "\n";
  }
  return 0;
}

}  // namespace ltx2
