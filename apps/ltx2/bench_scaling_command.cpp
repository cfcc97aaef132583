// `ltx2 bench scaling` and its runner "bench.scaling" (see bench_scaling_command.h). Every rank
// builds the same one-block-shared model and inputs on its GPU; a world of one runs the plain
// forward, larger worlds SequenceParallelTransformer. Each forward is timed with device events on
// every rank (the NCCL engine waits for each collective on the host, so the events bracket them);
// the slowest rank's median is the world's time.
#include "bench_scaling_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_transformer_command.h"
#include "bench_transformer_model.h"
#include "core/cuda/events.h"
#include "core/error.h"
#include "parallel/sequence_parallel.h"
#include "runtime/controller.h"
#include "runtime/launcher.h"
#include "runtime/runner.h"

namespace ltx2 {
namespace {

using nlohmann::json;
using namespace bench_model;
namespace tr = models::transformer;

class BenchScalingRunner : public runtime::Runner {
 public:
  void setup(const json& s, const runtime::RunnerContext& ctx) override {
    ctx_ = ctx;
    LTX2_CHECK(ctx.device.is_cuda(), "bench scaling: rank {} has no GPU", ctx.rank);
    config_ = model_config(s.at("model"));
    if (s.at("layers").get<int>() > 0) config_.num_layers = s.at("layers");
    weights_ = shared_block_weights(config_, ctx.device);
    model_.emplace(config_, weights_);
    if (ctx.world_size > 1) sp_.emplace(config_, weights_, *ctx.comm);
  }

  // Device GB/s this rank sends in one head scatter of the video self-attention's q (the SP
  // all-to-all, its layout copies included), timed alone with device events.
  double scatter_gbps(int64_t tokens) const {
    const int64_t world = ctx_.world_size, local = (tokens + world - 1) / world;
    const Tensor q =
        random_bf16({1, local, config_.video_heads, config_.video_head_dim}, 9, 1.f, ctx_.device);
    auto scatter = [&] { parallel::scatter_heads(*ctx_.comm, q); };
    cuda_time_each(ctx_.device.index, 3, scatter);
    std::vector<float> ms = cuda_time_each(ctx_.device.index, 20, scatter);
    std::sort(ms.begin(), ms.end());
    const double sent = static_cast<double>(q.numel()) * 2 * (world - 1) / world;
    return sent / (ms[ms.size() / 2] * 1e-3) / 1e9;
  }

  json run(const runtime::Job& job, runtime::ResultSink& out) override {
    const Inputs in = random_inputs(config_, shape_named(job.params.at("shape")), ctx_.device);
    tr::TransformerOutput result;
    double issue_seconds = 0;  // host time spent issuing the forwards (the device runs behind)
    auto forward = [&] {
      out.mark_progress("forward");  // the fleet's liveness check: a bench may run many
      const auto start = std::chrono::steady_clock::now();
      result = sp_ ? sp_->forward(&in.video, &in.audio) : model_->forward(&in.video, &in.audio);
      issue_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    cuda_time_each(ctx_.device.index, job.params.at("warmup"), forward);
    issue_seconds = 0;
    if (sp_) sp_->attention().traffic() = {};
    const int iterations = job.params.at("iterations");
    std::vector<float> ms = cuda_time_each(ctx_.device.index, iterations, forward);
    std::sort(ms.begin(), ms.end());
    json r = {{"ms", ms[ms.size() / 2]},
              {"host_issue_ms", issue_seconds * 1e3 / iterations},
              {"a2a_bytes", 0},
              {"a2a_ms", 0},
              {"a2a_gbps", 0}};
    if (sp_) {
      const auto& t = sp_->attention().traffic();
      const double bytes =
          static_cast<double>(t.video_self.bytes_sent + t.video_to_audio.bytes_sent) / iterations;
      const double gbps = scatter_gbps(in.video.latent.size(1));
      r["a2a_bytes"] = bytes;
      r["a2a_gbps"] = gbps;
      r["a2a_ms"] = bytes / gbps / 1e6;
    }
    if (ctx_.rank == 0)
      out.output("out", {},
                 {{"video", result.video.to(Device::cpu()).to(DType::F32)},
                  {"audio", result.audio.to(Device::cpu()).to(DType::F32)}});
    return r;
  }

 private:
  runtime::RunnerContext ctx_;
  TransformerConfig config_;
  tr::TransformerWeights weights_;
  std::optional<tr::Transformer> model_;
  std::optional<parallel::SequenceParallelTransformer> sp_;
};

const bool registered =
    runtime::register_runner("bench.scaling", [] { return std::make_unique<BenchScalingRunner>(); });

struct WorldResult {
  json per_rank;
  std::map<std::string, Tensor> out;
};

// One fleet on `devices`, one job per shape (the model is built once per world).
std::map<std::string, WorldResult> run_world(const BenchScalingOptions& opt,
                                             const std::vector<Device>& devices,
                                             const std::vector<std::string>& shapes) {
  runtime::FleetOptions fo;
  fo.devices = devices;
  fo.runner = "bench.scaling";
  fo.setup_config = {{"model", opt.model}, {"layers", opt.layers}};
  fo.sizes.ring_capacity = 64 << 20;
  fo.ready_timeout = std::chrono::minutes(5);
  fo.collective_timeout = std::chrono::minutes(2);
  runtime::Controller c(fo);
  c.start();
  std::map<std::string, WorldResult> results;
  for (const std::string& shape : shapes) {
    c.submit({{"shape", shape}, {"warmup", opt.warmup}, {"iterations", opt.iterations}});
    WorldResult& r = results[shape];
    for (;;) {
      auto ev = c.next(std::chrono::minutes(20));
      LTX2_CHECK(ev.has_value(), "bench scaling: no result from {} GPU(s) within 20 minutes", devices.size());
      if (ev->kind == runtime::JobEvent::Kind::Output && ev->name == "out")
        for (auto& t : ev->tensors) r.out[t.name] = t.tensor.clone();  // a view would hold ring space
      if (ev->kind == runtime::JobEvent::Kind::Done) {
        r.per_rank = ev->data;
        break;
      }
    }
  }
  c.shutdown();
  return results;
}

// max |a - b| / max |b| over the elements.
double relative_max_diff(const Tensor& a, const Tensor& b) {
  LTX2_CHECK(a.shape() == b.shape(), "bench scaling: output shapes differ between worlds");
  double diff = 0, scale = 0;
  const float *pa = a.data<float>(), *pb = b.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, std::fabs(double(pa[i]) - double(pb[i])));
    scale = std::max(scale, std::fabs(double(pb[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<int> default_worlds(int gpus) {
  std::vector<int> w;
  for (int n = 1; n <= gpus && n <= 8; n *= 2) w.push_back(n);
  if (w.back() != gpus) w.push_back(gpus);
  return w;
}

}  // namespace

CLI::App* add_bench_scaling_command(CLI::App* bench, BenchScalingOptions* opt) {
  auto* sub = bench->add_subcommand(
      "scaling",
      "The full-size transformer forward on 1, 2, 4, 8 GPUs (sequence parallel through NCCL): speedup, "
      "parallel efficiency, all-to-all GB/s per rank, difference from one GPU");
  sub->add_option("--model", opt->model, "19b or 22b")->capture_default_str();
  sub->add_option("--shape", opt->shapes, "stage1 (6144 video tokens) and/or full (24576); default both");
  sub->add_option("--gpus", opt->gpus, "GPUs to use, e.g. 0,1 (default: every visible GPU)");
  sub->add_option("--worlds", opt->worlds, "GPU counts to run (default: 1, 2, 4, 8 up to the GPUs, and all)")
      ->check(CLI::Range(1, runtime::kMaxRanks));
  add_forward_timing_options(sub, &opt->layers, &opt->warmup, &opt->iterations);
  sub->add_option("--link-gbps", opt->link_gbps,
                  "all-to-all GB/s per direction of the GPU link, for the last column")
      ->capture_default_str();
  sub->add_option("--json", opt->json_path, "also write the results to this JSON file");
  return sub;
}

int run_bench_scaling(const BenchScalingOptions& opt) {
  model_config(opt.model);  // refuses a bad --model before any process starts
  const std::vector<Device> all =
      runtime::plan_devices(opt.gpus.empty() ? std::vector<int>{} : runtime::parse_gpu_list(opt.gpus), 0);
  const std::vector<int> worlds =
      opt.worlds.empty() ? default_worlds(static_cast<int>(all.size())) : opt.worlds;
  for (int w : worlds)
    LTX2_CHECK(w <= static_cast<int>(all.size()), "bench scaling: --worlds {} but only {} GPU(s) given", w,
               all.size());
  const std::vector<std::string> shapes =
      opt.shapes.empty() ? std::vector<std::string>{"stage1", "full"} : opt.shapes;
  for (const auto& s : shapes) shape_named(s);

  json rows = json::array();
  std::printf("ltx2 bench scaling: %s, %s layers, median of %d forwards after %d warm-up, per world\n",
              opt.model.c_str(), opt.layers > 0 ? std::to_string(opt.layers).c_str() : "48", opt.iterations,
              opt.warmup);
  std::printf("%-7s %4s %10s %8s %6s %8s %12s %10s %8s %8s %12s %12s\n", "shape", "GPUs", "median ms",
              "speedup", "eff", "host ms", "a2a MB/rank", "a2a ms", "GB/s", "/link", "video diff",
              "audio diff");
  std::map<int, std::map<std::string, WorldResult>> by_world;
  for (int w : worlds)
    by_world[w] = run_world(opt, std::vector<Device>(all.begin(), all.begin() + w), shapes);
  for (const std::string& shape : shapes) {
    const WorldResult& first = by_world.at(worlds[0]).at(shape);
    double first_ms = 0;
    for (const json& rank : first.per_rank) first_ms = std::max(first_ms, rank.at("ms").get<double>());
    const double one_gpu_ms = first_ms * worlds[0];  // the first world is the baseline, per GPU
    for (int w : worlds) {
      const WorldResult& r = by_world.at(w).at(shape);
      double ms = 0, host_ms = 0, bytes = 0, a2a_ms = 0, gbps = 0;
      for (const json& rank : r.per_rank) {
        ms = std::max(ms, rank.at("ms").get<double>());
        host_ms = std::max(host_ms, rank.at("host_issue_ms").get<double>());
        bytes += rank.at("a2a_bytes").get<double>() / w;
        a2a_ms += rank.at("a2a_ms").get<double>() / w;
        gbps += rank.at("a2a_gbps").get<double>() / w;
      }
      const double speedup = one_gpu_ms / ms;
      const double video_diff = relative_max_diff(r.out.at("video"), first.out.at("video"));
      const double audio_diff = relative_max_diff(r.out.at("audio"), first.out.at("audio"));
      std::printf("%-7s %4d %10.1f %8.2f %5.0f%% %8.1f %12.1f %10.1f %8.1f %7.0f%% %12.2e %12.2e\n",
                  shape.c_str(), w, ms, speedup, 100 * speedup / w, host_ms, bytes / 1e6, a2a_ms, gbps,
                  100 * gbps / opt.link_gbps, video_diff, audio_diff);
      rows.push_back({{"shape", shape},
                      {"gpus", w},
                      {"median_ms", ms},
                      {"host_issue_ms", host_ms},
                      {"speedup", speedup},
                      {"efficiency", speedup / w},
                      {"a2a_bytes_per_rank", bytes},
                      {"a2a_ms_per_rank", a2a_ms},
                      {"a2a_gbps_per_rank", gbps},
                      {"relative_max_diff_video", video_diff},
                      {"relative_max_diff_audio", audio_diff},
                      {"per_rank", r.per_rank}});
    }
  }
  std::printf(
      "speedup: against the first world's time times its GPU count; host ms: time the host spends issuing "
      "one forward (near the median: the host bounds it); a2a: bytes each rank sends in the "
      "attentions' all-to-alls per forward; GB/s: one q head-scatter of the shape timed alone on the device "
      "(layout copies included); a2a ms: the bytes at that rate; diff: max |out - out(first world)| / "
      "max |out(first world)|\n");
  if (!opt.json_path.empty()) {
    std::ofstream f(opt.json_path);
    LTX2_CHECK(f.good(), "ltx2 bench scaling: cannot write --json file '{}'", opt.json_path);
    f << json{{"bench", "scaling"}, {"model", opt.model}, {"results", rows}}.dump(2) << "\n";
  }
  return 0;
}

}  // namespace ltx2
