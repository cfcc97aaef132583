// `ltx2 bench sp` and its runner "bench.sp" (see bench_sp_command.h). Every rank builds the same
// random transformer and inputs from the job's setup, runs SequenceParallelTransformer for each
// step, and returns what SequenceParallelAttention counted; the driver prints the table.
#include "bench_sp_command.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_all_to_all.h"
#include "bench_job.h"
#include "io/weights.h"
#include "parallel/sequence_parallel.h"
#include "runtime/controller.h"
#include "runtime/launcher.h"
#include "runtime/runner.h"

namespace ltx2 {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
namespace tr = models::transformer;

constexpr int64_t kBytesPerElement = 4;  // float32 on the CPU ranks

TransformerConfig bench_config(const json& s) {
  TransformerConfig c;
  c.num_layers = s.at("layers");
  c.video_heads = s.at("heads");
  c.video_head_dim = s.at("head_dim");
  c.audio_heads = s.at("audio_heads");
  c.audio_head_dim = s.at("audio_head_dim");
  c.caption_projection = false;  // contexts come at the inner widths
  c.video_context_dim = c.video_dim();
  c.audio_context_dim = c.audio_dim();
  return c;
}

// Deterministic inputs: every rank builds the same full modality.
tr::Modality bench_modality(int64_t batch, int64_t tokens, int64_t channels, int64_t axes, int64_t width,
                            uint64_t seed) {
  auto values = [seed](const Shape& shape, float scale) {
    Tensor t = Tensor::empty(shape);
    uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int64_t i = 0; i < t.numel(); ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      t.data<float>()[i] = scale * static_cast<float>(state >> 40) / static_cast<float>(1 << 24);
    }
    return t;
  };
  tr::Modality m;
  m.latent = values({batch, tokens, channels}, 2.0f);
  m.sigma = Tensor::full({batch}, 0.6f);
  m.timesteps = Tensor::full({batch, tokens, 1}, 0.6f);
  m.positions = Tensor::empty({batch, axes, tokens, 2});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t a = 0; a < axes; ++a)
      for (int64_t t = 0; t < tokens; ++t) {
        const float start = static_cast<float>(a == 0 ? t / 256 : (a == 1 ? (t / 16) % 16 : t % 16));
        float* p = m.positions.data<float>() + ((b * axes + a) * tokens + t) * 2;
        p[0] = start;
        p[1] = start + 1;
      }
  m.context = values({batch, 16, width}, 1.0f);
  return m;
}

json traffic_json(const parallel::CollectiveTraffic& t) {
  return {{"bytes", t.bytes_sent}, {"seconds", t.seconds}};
}

// One rank of the benchmark.
class BenchSpRunner : public runtime::Runner {
 public:
  void setup(const json& s, const runtime::RunnerContext& ctx) override {
    // 0: the worker's share of the node's cores, which it took before this setup (core/cpu.h).
    const int threads = s.at("threads_per_rank");
    if (threads > 0) omp_set_num_threads(threads);
    const TransformerConfig config = bench_config(s);
    auto synth = std::make_shared<WeightSynthesizer>(1);
    tr::TransformerWeights weights =
        tr::TransformerWeights::load(WeightView(synth, "model.diffusion_model.", "transformer"), config);
    const int64_t batch = s.at("batch");
    video_ = bench_modality(batch, s.at("video_tokens"), config.video_in_channels, 3, config.video_dim(), 2);
    audio_ = bench_modality(batch, s.at("audio_tokens"), config.audio_in_channels, 1, config.audio_dim(), 3);
    // No token budget: the shared-memory engine streams any size through its slots.
    sp_.emplace(config, std::move(weights), *ctx.comm, std::numeric_limits<int64_t>::max());
  }

  json run(const runtime::Job& job, runtime::ResultSink& out) override {
    json steps = json::array();
    const int count = job.params.at("steps");
    for (int step = 0; step < count; ++step) {
      out.mark_progress(fmt::format("step {}/{}", step + 1, count));  // the fleet's liveness check
      sp_->attention().traffic() = {};
      const auto start = SteadyClock::now();
      sp_->forward(&video_, &audio_);
      const parallel::SequenceParallelTraffic& t = sp_->attention().traffic();
      steps.push_back({{"seconds", std::chrono::duration<double>(SteadyClock::now() - start).count()},
                       {"video_self", traffic_json(t.video_self)},
                       {"video_to_audio", traffic_json(t.video_to_audio)},
                       {"output_gather", traffic_json(t.output_gather)}});
    }
    return steps;
  }

 private:
  tr::Modality video_, audio_;
  std::optional<parallel::SequenceParallelTransformer> sp_;
};

const bool registered =
    runtime::register_runner("bench.sp", [] { return std::make_unique<BenchSpRunner>(); });

}  // namespace

CLI::App* add_bench_sp_command(CLI::App* bench, BenchSpOptions* opt) {
  auto* cmd = bench->add_subcommand("sp",
                                    "Sequence-parallel attention: communication bytes and time per step "
                                    "and rank on CPU ranks, against 4·N·h·b·(P−1)/P² bytes per layer");
  cmd->add_option("--ranks", opt->ranks, "CPU ranks (P)")->check(CLI::Range(1, runtime::kMaxRanks));
  cmd->add_option("--steps", opt->steps, "transformer calls timed")->check(CLI::Range(1, 1000));
  cmd->add_option("--layers", opt->layers, "transformer blocks")->check(CLI::Range(1, 64));
  cmd->add_option("--batch", opt->batch, "batch size (b in N = batch x padded tokens)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--video-tokens", opt->video_tokens, "video tokens (padded to a multiple of P)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--heads", opt->heads, "video heads")->check(CLI::Range(1, 256));
  cmd->add_option("--head-dim", opt->head_dim, "video head width")->check(CLI::Range(2, 1024));
  cmd->add_option("--audio-tokens", opt->audio_tokens, "audio tokens")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--audio-heads", opt->audio_heads, "audio heads")->check(CLI::Range(1, 256));
  cmd->add_option("--audio-head-dim", opt->audio_head_dim, "audio head width")->check(CLI::Range(2, 1024));
  cmd->add_option("--threads-per-rank", opt->threads_per_rank,
                  "OpenMP threads per rank (0: the node's cores / its ranks, or OMP_NUM_THREADS when set)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--all-to-all", opt->all_to_all,
                "Instead: the communicator's all-to-all alone over sizes from --min-bytes to --max-bytes, "
                "with nccl-tests' algbw and busbw");
  cmd->add_option("--gpus", opt->gpus,
                  "--all-to-all on these GPUs, one rank each (NCCL), e.g. 0,1 (default: "
                  "--ranks CPU ranks)");
  cmd->add_option("--min-bytes", opt->min_bytes, "--all-to-all: the smallest size a rank sends")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--max-bytes", opt->max_bytes, "--all-to-all: the largest size a rank sends")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--warmup", opt->warmup, "--all-to-all: untimed collectives per size")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--iterations", opt->iterations, "--all-to-all: timed collectives per size")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--json", opt->json, "--all-to-all: also write the results to this JSON file");
  return cmd;
}

int run_bench_sp(const BenchSpOptions& opt) {
  if (opt.all_to_all) return run_bench_all_to_all(opt);
  LTX2_CHECK(opt.gpus.empty(), "--gpus applies to --all-to-all only (the SP volume runs on CPU ranks)");
  const int64_t P = opt.ranks, B = opt.batch;
  const int64_t padded = (opt.video_tokens + P - 1) / P * P, N = B * padded;
  const int64_t h = int64_t{opt.heads} * opt.head_dim, ha = int64_t{opt.audio_heads} * opt.audio_head_dim;
  // Per layer and rank: q, k, v scattered and the output gathered, each (N/P)·h·b·(P−1)/P bytes.
  const double self_formula = 4.0 * N * h * kBytesPerElement * (P - 1) / (P * P);
  // Video->audio: k, v scattered, then this rank's audio output heads sent to the P−1 others.
  const double v2a_formula = 2.0 * N * ha * kBytesPerElement * (P - 1) / (P * P) +
                             static_cast<double>(B * opt.audio_tokens * ha * kBytesPerElement) / P * (P - 1);

  runtime::FleetOptions fo;
  fo.devices = runtime::plan_devices({}, opt.ranks);
  fo.runner = "bench.sp";
  fo.setup_config = {{"layers", opt.layers},
                     {"batch", opt.batch},
                     {"video_tokens", opt.video_tokens},
                     {"heads", opt.heads},
                     {"head_dim", opt.head_dim},
                     {"audio_tokens", opt.audio_tokens},
                     {"audio_heads", opt.audio_heads},
                     {"audio_head_dim", opt.audio_head_dim},
                     {"threads_per_rank", opt.threads_per_rank}};
  fo.sizes.comm_slot_capacity = 4 << 20;
  runtime::Controller c(fo);
  c.start();
  const json per_rank = run_bench_job(c, {{"steps", opt.steps}}, std::chrono::minutes(30), "bench sp");
  c.shutdown();

  std::printf(
      "sequence parallel on %d CPU ranks: batch %d, %d video tokens (padded %lld), h = %lld, "
      "%d audio tokens, h_audio = %lld, %d layers, float32\n",
      opt.ranks, opt.batch, opt.video_tokens, static_cast<long long>(padded), static_cast<long long>(h),
      opt.audio_tokens, static_cast<long long>(ha), opt.layers);
  std::printf(
      "per layer and rank: video self-attention formula 4·N·h·b·(P−1)/P² = %.0f B; "
      "video->audio 2·N·h_a·b·(P−1)/P² + B·Ta·h_a·b·(P−1)/P = %.0f B\n",
      self_formula, v2a_formula);
  std::printf(
      "bytes: sent to other ranks; ms: wall time inside the collectives (includes waiting for the slowest "
      "rank)\n");
  std::printf("%4s %4s %16s %8s %10s %16s %8s %10s %12s %10s %10s\n", "rank", "step", "self B/layer",
              "/formula", "self ms", "v2a B/layer", "/formula", "v2a ms", "gather B", "gather ms", "step ms");
  for (size_t r = 0; r < per_rank.size(); ++r) {
    for (size_t s = 0; s < per_rank[r].size(); ++s) {
      const json& st = per_rank[r][s];
      const double self_b = st["video_self"]["bytes"].get<double>() / opt.layers;
      const double v2a_b = st["video_to_audio"]["bytes"].get<double>() / opt.layers;
      auto ratio = [](double got, double want) { return want > 0 ? got / want : (got == 0 ? 1.0 : 0.0); };
      std::printf("%4zu %4zu %16.0f %8.4f %10.3f %16.0f %8.4f %10.3f %12.0f %10.3f %10.3f\n", r, s, self_b,
                  ratio(self_b, self_formula), st["video_self"]["seconds"].get<double>() * 1e3, v2a_b,
                  ratio(v2a_b, v2a_formula), st["video_to_audio"]["seconds"].get<double>() * 1e3,
                  st["output_gather"]["bytes"].get<double>(),
                  st["output_gather"]["seconds"].get<double>() * 1e3, st["seconds"].get<double>() * 1e3);
    }
  }
  return 0;
}

}  // namespace ltx2
