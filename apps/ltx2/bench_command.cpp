// `ltx2 bench attention|gemm|memory` (see bench_command.h). Inputs are random bf16 tensors made on the
// host with a counter hash (fast for the 100M-element attention inputs) and uploaded once; each
// kernel is timed with device events, one event pair per run, after warm-up runs. Attention runs
// once per engine (ops::set_attention_engine), so the engines' rows of a shape stand together.
#include "bench_command.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/cuda/events.h"
#include "core/error.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/fp8_quantize.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/norm_rope.h"
#include "ops/rope.h"

namespace ltx2 {

namespace {

// Uniform(-1, 1) values from a hash of the element index (splitmix64), on the given device as bf16.
Tensor random_bf16(const Shape& shape, uint64_t seed, Device device) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data<float>();
  int64_t n = t.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (static_cast<uint64_t>(i) + seed * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    z ^= z >> 29;
    p[i] = static_cast<float>(z >> 40) * (2.f / 16777216.f) - 1.f;
  }
  return t.to(DType::BF16).to(device);
}

// One timed kernel: FLOPs for compute-bound ones, bytes moved (read + written) for memory-bound ones.
// peak_scale: its tensor cores' peak over bf16's (2 for FP8 on Hopper), for its MFU.
struct Work {
  double flops = 0, bytes = 0;
  double peak_scale = 1;
};
struct Result {
  std::string name, shape;
  Work work;
  double median_ms, min_ms;
};

Result time_kernel(const std::string& name, const std::string& shape, Work work, Device device,
                   const BenchOptions& opt, const std::function<void()>& fn) {
  cuda_time_each(device.index, opt.warmup, fn);
  std::vector<float> ms = cuda_time_each(device.index, opt.iterations, fn);
  std::sort(ms.begin(), ms.end());
  return {name, shape, work, ms[ms.size() / 2], ms.front()};
}

int report(const std::string& bench, const std::vector<Result>& results, const BenchOptions& opt) {
  const bool memory = bench == "memory";
  if (memory)
    std::printf("%-14s %-34s %10s %10s %8s\n", "kernel", "shape", "median ms", "MB moved", "GB/s");
  else
    std::printf("%-14s %-34s %10s %10s %8s\n", "kernel", "shape", "median ms", "TFLOP/s", "MFU");
  nlohmann::json rows = nlohmann::json::array();
  for (const Result& r : results) {
    const double seconds = r.median_ms * 1e-3;
    const double tflops = r.work.flops / seconds / 1e12, gbps = r.work.bytes / seconds / 1e9;
    if (memory)
      std::printf("%-14s %-34s %10.3f %10.1f %8.0f\n", r.name.c_str(), r.shape.c_str(), r.median_ms,
                  r.work.bytes / 1e6, gbps);
    else
      std::printf("%-14s %-34s %10.3f %10.1f %7.1f%%\n", r.name.c_str(), r.shape.c_str(), r.median_ms, tflops,
                  100.0 * tflops / (opt.peak_tflops * r.work.peak_scale));
    nlohmann::json row = {
        {"kernel", r.name}, {"shape", r.shape}, {"median_ms", r.median_ms}, {"min_ms", r.min_ms}};
    if (memory) {
      row["bytes"] = r.work.bytes;
      row["gb_per_s"] = gbps;
    } else {
      row["flops"] = r.work.flops;
      row["tflops"] = tflops;
      row["peak_tflops"] = opt.peak_tflops * r.work.peak_scale;
      row["mfu"] = tflops / (opt.peak_tflops * r.work.peak_scale);
    }
    rows.push_back(row);
  }
  if (!opt.json_path.empty()) {
    nlohmann::json doc = {{"bench", bench},
                          {"device", opt.device},
                          {"warmup", opt.warmup},
                          {"iterations", opt.iterations},
                          {"peak_tflops", opt.peak_tflops},
                          {"results", rows}};
    std::ofstream out(opt.json_path);
    LTX2_CHECK(out.good(), "bench: cannot write --json file '{}'", opt.json_path);
    out << doc.dump(2) << "\n";
  }
  return 0;
}

// q/k/v of one attention: [B, H, T, D] tensors, or (model layout) [B, T, H, D] ones viewed as
// [B, H, T, D], the strides the transformer's (and Gemma's) head split gives.
Tensor attention_input(const BenchOptions& opt, int64_t heads, int64_t T, uint64_t seed, Device device) {
  if (!opt.model_layout) return random_bf16({1, heads, T, opt.head_dim}, seed, device);
  return random_bf16({1, T, heads, opt.head_dim}, seed, device).transpose(1, 2);
}

// Gemma's causal mask [1, 1, Tq, Tk] in float32: key j is visible to query i when j <= i, hidden
// ones hold the lowest float (gemma3.cpp's mask without padding or a window).
Tensor causal_mask(int64_t Tq, int64_t Tk, Device device) {
  Tensor m = Tensor::empty({1, 1, Tq, Tk});
  float* p = m.data<float>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t j = 0; j < Tk; ++j) p[i * Tk + j] = j <= i ? 0.f : std::numeric_limits<float>::lowest();
  return m.to(device);
}

int bench_attention(const BenchOptions& opt, Device device) {
  std::vector<int64_t> tokens = opt.tokens.empty() ? std::vector<int64_t>{6144, 24576} : opt.tokens;
  const int64_t kv_heads = opt.kv_heads > 0 ? opt.kv_heads : opt.heads;
  LTX2_CHECK(opt.heads % kv_heads == 0, "ltx2 bench attention: --heads {} is not a multiple of --kv-heads {}",
             opt.heads, kv_heads);
  // An engine, or "8bit": the 8-bit precision (ops::AttentionPrecision) with the engines on auto.
  struct Row {
    ops::AttentionEngine engine;
    ops::AttentionPrecision precision;
  };
  std::vector<Row> engines;
  for (const std::string& name : opt.engines)
    engines.push_back(
        name == "8bit" ? Row{ops::AttentionEngine::Auto, ops::AttentionPrecision::EightBit}
                       : Row{ops::parse_attention_engine(name, "--engines"), ops::AttentionPrecision::Bf16});
  if (engines.empty()) {
    const auto bf16 = ops::AttentionPrecision::Bf16;
    engines.push_back({ops::AttentionEngine::Wgmma, bf16});
    // The fa3 kernel takes unmasked attention at head dim 128, cuDNN unmasked multi-head attention
    // at 64 and 128 (ops/attention.h); elsewhere their rows would time the wgmma kernel again.
    if (!opt.causal && opt.head_dim == 128) engines.push_back({ops::AttentionEngine::Fa3, bf16});
    const bool cudnn_shape =
        !opt.causal && kv_heads == opt.heads && (opt.head_dim == 64 || opt.head_dim == 128);
    if (ops::cudnn_attention_built() && cudnn_shape) engines.push_back({ops::AttentionEngine::Cudnn, bf16});
  }
  const ops::AttentionEngine saved = ops::attention_engine();
  const ops::AttentionPrecision saved_precision = ops::attention_precision();
  std::vector<Result> results;
  for (int64_t T : tokens) {
    const int64_t Tk = opt.kv_tokens > 0 ? opt.kv_tokens : T;
    Tensor q = attention_input(opt, opt.heads, T, 1, device),
           k = attention_input(opt, kv_heads, Tk, 2, device),
           v = attention_input(opt, kv_heads, Tk, 3, device);
    const Tensor mask = opt.causal ? causal_mask(T, Tk, device) : Tensor();
    // Every tile is computed whatever the mask says, so a causal run is counted in full too.
    double flops = 4.0 * opt.heads * double(T) * double(Tk) * opt.head_dim;
    std::string desc = Tk == T ? fmt::format("B1 H{} T{} D{}", opt.heads, T, opt.head_dim)
                               : fmt::format("B1 H{} Tq{} Tk{} D{}", opt.heads, T, Tk, opt.head_dim);
    if (kv_heads != opt.heads) desc += fmt::format(" Hkv{}", kv_heads);
    if (opt.causal) desc += " causal";
    if (opt.model_layout) desc += " bthd";
    for (const Row& row : engines) {
      ops::set_attention_engine(row.engine);
      ops::set_attention_precision(row.precision);
      const std::string name = row.precision == ops::AttentionPrecision::EightBit
                                   ? "attn 8bit"
                                   : fmt::format("attn {}", ops::attention_engine_name(row.engine));
      results.push_back(
          time_kernel(name, desc, {flops, 0}, device, opt, [&] { ops::attention(q, k, v, mask); }));
    }
  }
  ops::set_attention_engine(saved);
  ops::set_attention_precision(saved_precision);
  return report("attention", results, opt);
}

int bench_gemm(const BenchOptions& opt, Device device) {
  std::vector<int64_t> tokens = opt.tokens.empty() ? std::vector<int64_t>{6144, 24576} : opt.tokens;
  const int64_t d = opt.inner_dim, ff = 4 * opt.inner_dim;
  struct Gemm {
    const char* name;
    int64_t n, k;
  };
  // The linear layers of one transformer block: q/k/v/out projections, the self-attention's q, k
  // and v as one GEMM, and the feed-forward pair.
  const Gemm gemms[] = {{"proj", d, d}, {"qkv", 3 * d, d}, {"ff_up", ff, d}, {"ff_down", d, ff}};
  std::vector<Result> results;
  for (int64_t M : tokens) {
    for (const Gemm& g : gemms) {
      Tensor x = random_bf16({M, g.k}, 4, device), w = random_bf16({g.n, g.k}, 5, device);
      Tensor b = random_bf16({g.n}, 6, device);
      std::string desc = fmt::format("M{} N{} K{} +bias", M, g.n, g.k);
      const Work work{2.0 * M * g.n * g.k, 0};
      results.push_back(time_kernel(g.name, desc, work, device, opt, [&] { ops::linear(x, w, b); }));
      // FP8 (fp8-scaled-mm): per-tensor scales mapping the uniform(-1, 1) values onto e4m3's range;
      // the op as the model calls it (bf16 x quantized on the fly), and the FP8 GEMM alone.
      const Tensor unit_scale = Tensor::scalar(1.f / ops::kF8E4M3Max).to(device);
      const ops::Fp8Linear fp8{ops::mul(w, ops::kF8E4M3Max).to(DType::F8E4M3), unit_scale, unit_scale, b};
      const Tensor x8 = ops::mul(x, ops::kF8E4M3Max).to(DType::F8E4M3);
      const Work fp8_work{work.flops, 0, 2};
      results.push_back(time_kernel(fmt::format("{} fp8", g.name), desc + " bf16 x quantized", fp8_work,
                                    device, opt, [&] { ops::linear_fp8(x, fp8); }));
      results.push_back(time_kernel(fmt::format("{} fp8 gemm", g.name), desc + " e4m3 x", fp8_work, device,
                                    opt, [&] { ops::linear_fp8(x8, fp8); }));
      // fp8 (ours): per-channel weight scales, each row of x quantized with its own scale; the op as
      // the model calls it on a bf16 x (the row quantizer, then the GEMM), and the GEMM alone on rows
      // quantized already (as the AdaLN norm's kernel hands them over).
      const ops::Fp8Rows w_rows = ops::quantize_rows_f8e4m3(w), x_rows = ops::quantize_rows_f8e4m3(x);
      const ops::Fp8Linear per_row{w_rows.codes, w_rows.scales, Tensor(), b};
      results.push_back(time_kernel(fmt::format("{} fp8 rows", g.name), desc + " bf16 x quantized per row",
                                    fp8_work, device, opt, [&] { ops::linear_fp8(x, per_row); }));
      results.push_back(time_kernel(fmt::format("{} fp8 rows gemm", g.name), desc + " e4m3 rows", fp8_work,
                                    device, opt, [&] { ops::linear_fp8(x_rows, per_row); }));
    }
  }
  return report("gemm", results, opt);
}

// The memory-bound passes around attention at the model's width: the head split / merge transposes
// (GPU strided copy) and q/k norm + RoPE, unfused and fused, each with the bytes it reads and writes.
int bench_memory(const BenchOptions& opt, Device device) {
  std::vector<int64_t> tokens = opt.tokens.empty() ? std::vector<int64_t>{6144, 24576} : opt.tokens;
  const int64_t H = opt.heads, D = opt.head_dim, dim = H * D;
  std::vector<Result> results;
  for (int64_t T : tokens) {
    const Tensor x = random_bf16({1, T, H, D}, 7, device), w = random_bf16({dim}, 8, device);
    const Tensor heads_first = x.transpose(1, 2).contiguous();
    const double pass = 2.0 * static_cast<double>(x.nbytes());  // x read and written once
    const std::string desc = fmt::format("B1 T{} H{} D{}", T, H, D);
    results.push_back(
        time_kernel("split heads", desc, {0, pass}, device, opt, [&] { x.transpose(1, 2).contiguous(); }));
    results.push_back(time_kernel("merge heads", desc, {0, pass}, device, opt,
                                  [&] { heads_first.transpose(1, 2).contiguous(); }));
    const ops::RopeTables rope{random_bf16({1, H, T, D / 2}, 9, device).to(DType::F32),
                               random_bf16({1, H, T, D / 2}, 10, device).to(DType::F32),
                               ops::RopeLayout::Split};
    const Tensor q = x.view({1, T, dim});
    const std::string rope_desc = fmt::format("B1 T{} dim{} f32 split tables", T, dim);
    const double tables = static_cast<double>(rope.cos.nbytes() + rope.sin.nbytes());
    results.push_back(time_kernel("qk norm, rope", rope_desc, {0, 2 * pass + tables}, device, opt,
                                  [&] { ops::apply_rope(ops::rms_norm(q, w, 1e-6f), rope); }));
    results.push_back(time_kernel("qk norm+rope", rope_desc, {0, pass + tables}, device, opt,
                                  [&] { ops::rms_norm_rope(q, w, 1e-6f, rope); }));
  }
  return report("memory", results, opt);
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchOptions& opt) {
  auto* bench = app.add_subcommand("bench",
                                   "Benchmarks: the CUDA kernels at the LTX-2 shapes "
                                   "(TFLOP/s, median ms, MFU), the fleet; they measure, they do not test");
  bench->require_subcommand(1);
  for (auto* sub :
       {bench->add_subcommand("attention",
                              "Attention on each engine (wgmma, cuDNN), 32 heads x 128; Gemma 3 12B: "
                              "--tokens 1024 --heads 16 --kv-heads 8 --head-dim 256 --causal --model-layout"),
        bench->add_subcommand("gemm",
                              "The transformer block's linear layers (q/k/v/out one by one and as one GEMM, "
                              "the feed-forward; bf16; FP8 per tensor as fp8-scaled-mm and per row as "
                              "fp8; bias)"),
        bench->add_subcommand("memory", "Head split/merge copies and q/k norm + RoPE (unfused, fused)")}) {
    sub->add_option("--device", opt.device, "cuda:N")->capture_default_str();
    sub->add_option("--tokens", opt.tokens, "token counts (default 6144 24576)");
    sub->add_option("--heads", opt.heads, "attention heads")->capture_default_str();
    sub->add_option("--head-dim", opt.head_dim,
                    "attention head dim (the flash kernel: multiples of 8, 64-256)")
        ->capture_default_str();
    sub->add_option("--inner-dim", opt.inner_dim, "transformer inner dim")->capture_default_str();
    sub->add_option("--warmup", opt.warmup, "untimed runs first")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--iterations", opt.iterations, "timed runs")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    if (sub->get_name() == "attention") {
      sub->add_option("--kv-tokens", opt.kv_tokens, "key/value tokens (default: as many as --tokens)");
      sub->add_option("--kv-heads", opt.kv_heads,
                      "key/value heads, grouped-query (default: as many as --heads)");
      sub->add_flag("--causal", opt.causal,
                    "a causal float mask (the lowest float above the diagonal, as Gemma's)");
      sub->add_flag("--model-layout", opt.model_layout,
                    "q, k, v as the transformer passes them ([B, T, H, D] viewed as [B, H, T, D])");
      sub->add_option("--engines", opt.engines,
                      "attention engines: wgmma fa3 cudnn auto, or 8bit (8-bit precision, engines on auto; "
                      "default: the bf16 "
                      "engines that take the shape)");
    }
    sub->add_option("--peak-tflops", opt.peak_tflops,
                    "dense bf16 peak for the MFU column (FP8 rows use twice it, Hopper's FP8 rate)")
        ->capture_default_str();
    sub->add_option("--json", opt.json_path, "also write the results to this JSON file");
  }
  return bench;
}

int run_bench(const CLI::App& bench, const BenchOptions& opt) {
  Device device = Device::parse(opt.device);
  LTX2_CHECK(device.is_cuda(), "ltx2 bench: --device must be a GPU (cuda:N), got '{}'", opt.device);
  LTX2_CHECK(cuda_built(), "ltx2 bench: this ltx2 was built without the CUDA backend");
  if (bench.got_subcommand("attention")) return bench_attention(opt, device);
  if (bench.got_subcommand("memory")) return bench_memory(opt, device);
  return bench_gemm(opt, device);
}

}  // namespace ltx2
