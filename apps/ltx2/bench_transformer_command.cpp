// `ltx2 bench transformer` (see bench_transformer_command.h). The model is built by its own loader
// over a WeightSynthesizer (bf16 on the device) with ONE block's weights, which every layer then
// shares: the FLOPs and the activations are the full model's, the weight memory is one block's.
// Inputs are random bf16 latents/contexts at the pipeline's shapes, per-token timesteps (so the
// AdaLN tables are per token, as in the reference pipeline), no masks. The FLOPs are counted from
// the loaded weight shapes (every linear) and the attention shapes (4·Tq·Tk·inner). Each shape's
// roofline: its linears' FLOPs at the best GEMM rate measured in the same run plus attention's
// measured time, next to the forward's.
#include "bench_transformer_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "bench_stats.h"
#include "bench_transformer_model.h"
#include "core/cuda/events.h"
#include "core/cuda/memory.h"
#include "core/error.h"
#include "core/op_profile.h"
#include "core/similarity.h"
#include "io/configs/transformer_config.h"
#include "io/weights.h"
#include "models/transformer/modules.h"
#include "models/transformer/transformer.h"
#include "ops/attention.h"
#include "ops/rope.h"

namespace ltx2 {

namespace {

using bench_stats::gib;
using bench_stats::median;

namespace tr = models::transformer;
using nlohmann::json;
using namespace bench_model;

// One linear of the forward: its weights and the rows it is applied to.
struct LinearUse {
  const tr::LinearWeights* w;
  int64_t rows;
};
struct AttentionUse {
  tr::AttentionSite site;
  int64_t tq, tk, inner;
};

struct Workload {
  std::vector<LinearUse> linears;  // one block's (the first block_linears) and the top level's
  size_t block_linears = 0;
  std::vector<AttentionUse> attentions;
  double flops = 0;
  double linear_flops = 0;  // the part of `flops` the linears do
};

Workload workload(const tr::TransformerWeights& w, int64_t layers, int64_t tv, int64_t ta, int64_t s) {
  Workload out;
  std::vector<LinearUse> block, top;
  auto attn = [&](const tr::AttentionWeights& a, tr::AttentionSite site, int64_t tq, int64_t tk) {
    for (const auto* l : {&a.to_q, &a.to_out, &a.to_gate_logits}) block.push_back({l, tq});
    for (const auto* l : {&a.to_k, &a.to_v}) block.push_back({l, tk});
    out.attentions.push_back({site, tq, tk, a.to_q.weight.size(0)});
  };
  const tr::BlockWeights& b = w.blocks[0];
  attn(b.video_self, tr::AttentionSite::VideoSelf, tv, tv);
  attn(b.video_text, tr::AttentionSite::VideoText, tv, s);
  attn(b.audio_self, tr::AttentionSite::AudioSelf, ta, ta);
  attn(b.audio_text, tr::AttentionSite::AudioText, ta, s);
  attn(b.audio_to_video, tr::AttentionSite::AudioToVideo, tv, ta);
  attn(b.video_to_audio, tr::AttentionSite::VideoToAudio, ta, tv);
  for (const auto* l : {&b.video_ff.proj_in, &b.video_ff.proj_out}) block.push_back({l, tv});
  for (const auto* l : {&b.audio_ff.proj_in, &b.audio_ff.proj_out}) block.push_back({l, ta});
  auto stream = [&](const tr::StreamWeights& sw, int64_t t) {
    for (const auto* l :
         {&sw.patchify_proj, &sw.proj_out, &sw.adaln.linear_1, &sw.adaln.linear_2, &sw.adaln.linear,
          &sw.av_scale_shift.linear_1, &sw.av_scale_shift.linear_2, &sw.av_scale_shift.linear})
      top.push_back({l, t});
    for (const auto* l : {&sw.caption_linear_1, &sw.caption_linear_2}) top.push_back({l, s});
    for (const auto* l : {&sw.prompt_adaln.linear_1, &sw.prompt_adaln.linear_2, &sw.prompt_adaln.linear,
                          &sw.av_gate.linear_1, &sw.av_gate.linear_2, &sw.av_gate.linear})
      top.push_back({l, 1});
  };
  stream(w.video, tv);
  stream(w.audio, ta);
  auto linear_flops = [](const LinearUse& u) {
    return u.w->weight.defined() ? 2.0 * u.rows * u.w->weight.size(0) * u.w->weight.size(1) : 0.0;
  };
  for (const LinearUse& u : block) out.linear_flops += layers * linear_flops(u);
  for (const LinearUse& u : top) out.linear_flops += linear_flops(u);
  out.flops = out.linear_flops;
  for (const AttentionUse& a : out.attentions) out.flops += layers * 4.0 * a.tq * a.tk * a.inner;
  out.linears = block;
  out.block_linears = block.size();
  out.linears.insert(out.linears.end(), top.begin(), top.end());
  return out;
}

// The bytes of the model's weights if every layer held its own copy of block 0's tensors (as a
// loaded checkpoint does): the top level once, block 0 times `layers`.
size_t model_weight_bytes(tr::TransformerWeights weights, int64_t layers) {
  size_t bytes = 0;
  for (const auto& [name, tensor] : weights.named_tensors()) {
    if (!tensor->defined()) continue;
    if (name.starts_with("transformer_blocks.0."))
      bytes += layers * tensor->nbytes();
    else if (!name.starts_with("transformer_blocks."))
      bytes += tensor->nbytes();
  }
  return bytes;
}

// Attends locally; while `timing`, each call is bracketed by device events (one host wait per
// call: only for the breakdown run, never for the timed forwards).
class TimedAttention : public tr::AttentionStrategy {
 public:
  explicit TimedAttention(int device) : device_(device) {}
  Tensor attend(tr::AttentionSite site, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                const Tensor& mask) const override {
    if (!timing) return local_.attend(site, q, k, v, heads, mask);
    Tensor out;
    ms[site] += cuda_time_each(device_, 1, [&] { out = local_.attend(site, q, k, v, heads, mask); })[0];
    return out;
  }
  mutable bool timing = false;
  mutable std::map<tr::AttentionSite, double> ms;

 private:
  int device_;
  tr::LocalAttention local_;
};

// Device milliseconds to form the video self-attention RoPE tables from the device positions (the
// forward does it once per stream, ops/rope.h).
double video_rope_ms(const TransformerConfig& c, const Tensor& positions, int device) {
  ops::RopeSpec spec;
  spec.dim = c.video_dim();
  spec.heads = c.video_heads;
  spec.theta = c.rope_theta;
  spec.max_pos = c.video_max_pos;
  spec.grid = ops::RopeGridPrecision::Float64;
  std::vector<float> ms = cuda_time_each(device, 3, [&] { ops::rope_tables(positions, spec); });
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One forward under an OpProfile: each op kind's calls and device ms, printed and returned as JSON.
json op_profile(int device, const std::function<void()>& forward) {
  OpProfile profile(device);
  const float forward_ms = cuda_time_each(device, 1, forward)[0];
  const std::vector<OpProfile::Entry> entries = profile.finish();
  double in_ops = 0;
  for (const auto& e : entries) in_ops += e.ms;
  std::printf("  profile of one forward (%.1f ms with the profile's events; %.1f ms inside ops):\n",
              forward_ms, in_ops);
  json out = {{"forward_ms", forward_ms}, {"ops", json::array()}};
  for (const auto& e : entries) {
    std::printf("    %-30s %6lld calls %9.1f ms %5.1f%%\n", e.op.c_str(), static_cast<long long>(e.calls),
                e.ms, 100 * e.ms / forward_ms);
    out["ops"].push_back({{"op", e.op}, {"calls", e.calls}, {"ms", e.ms}});
  }
  std::printf("    %-30s %19.1f ms %5.1f%%\n", "(between ops)", forward_ms - in_ops,
              100 * (forward_ms - in_ops) / forward_ms);
  return out;
}

}  // namespace

void add_forward_timing_options(CLI::App* sub, int* layers, int* warmup, int* iterations) {
  sub->add_option("--layers", *layers, "blocks (0: the model's 48)")->check(CLI::NonNegativeNumber);
  sub->add_option("--warmup", *warmup, "untimed forwards first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--iterations", *iterations, "timed forwards")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

CLI::App* add_bench_transformer_command(CLI::App* bench, BenchTransformerOptions* opt) {
  auto* sub = bench->add_subcommand("transformer",
                                    "One full-size transformer forward (video + audio, bf16, random "
                                    "weights shared by every layer) at the stage-1 and full shapes");
  sub->add_option("--model", opt->model, "19b or 22b")->capture_default_str();
  sub->add_option("--shape", opt->shapes, "stage1 (6144 video tokens) and/or full (24576); default both");
  sub->add_option("--device", opt->device, "cuda:N")->capture_default_str();
  add_forward_timing_options(sub, &opt->layers, &opt->warmup, &opt->iterations);
  sub->add_option("--peak-tflops", opt->peak_tflops, "peak for the MFU column")->capture_default_str();
  sub->add_option("--quantization", opt->quantization,
                  "none (bf16 linears), fp8 (the blocks' q, k, v, out and feed-forward linears as FP8 "
                  "GEMMs, per-channel weight and per-token activation scales) or fp8-scaled-mm (the "
                  "same linears, per-tensor scales)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "fp8", "fp8-scaled-mm"}));
  sub->add_option("--attention-precision", opt->attention_precision,
                  "bf16, or 8bit (the video attentions in INT8/FP8, ops/attention.h; the outputs of one "
                  "forward are then compared with a bf16-precision forward: relative L2 and cosine)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "8bit"}));
  sub->add_flag("--profile", opt->profile, "also time every op kind in one forward (device events)");
  sub->add_option("--json", opt->json_path, "also write the results to this JSON file");
  return sub;
}

int run_bench_transformer(const BenchTransformerOptions& opt) {
  const Device device = Device::parse(opt.device);
  LTX2_CHECK(device.is_cuda(), "ltx2 bench transformer: --device must be a GPU (cuda:N), got '{}'",
             opt.device);
  LTX2_CHECK(cuda_built(), "ltx2 bench transformer: this ltx2 was built without the CUDA backend");
  TransformerConfig config = model_config(opt.model);
  if (opt.layers > 0) config.num_layers = opt.layers;

  const Quantization quantization = parse_quantization(opt.quantization);
  const ops::AttentionPrecision precision =
      ops::parse_attention_precision(opt.attention_precision, "--attention-precision");
  const ops::AttentionPrecision saved_precision = ops::attention_precision();
  ops::set_attention_precision(precision);
  const tr::TransformerWeights weights = shared_block_weights(config, device, quantization);
  auto attention = std::make_shared<TimedAttention>(device.index);
  const tr::Transformer model(config, weights, attention);
  cuda_synchronize(device.index);
  const size_t weight_bytes = cuda_memory_stats(device.index).allocated;
  const size_t model_bytes = model_weight_bytes(weights, config.num_layers);
  std::printf(
      "ltx2 bench transformer: %s, %s, %lld layers sharing one block's weights (%.2f GiB on %s; the whole "
      "model's would be %.2f GiB)\n",
      opt.model.c_str(), quantization_name(quantization), static_cast<long long>(config.num_layers),
      gib(weight_bytes), opt.device.c_str(), gib(model_bytes));

  const std::vector<std::string> shapes =
      opt.shapes.empty() ? std::vector<std::string>{"stage1", "full"} : opt.shapes;
  json rows = json::array();
  std::printf("%-6s %-7s %8s %10s %9s %6s %9s %8s %9s\n", "model", "shape", "tokens", "median ms", "TFLOP/s",
              "MFU", "peak GiB", "ref ms", "ours/ref");
  for (const std::string& shape_name : shapes) {
    const Shape3 shape = shape_named(shape_name);
    const int64_t tv = shape.tokens();
    const Inputs inputs = random_inputs(config, shape, device);
    const tr::Modality &video = inputs.video, &audio = inputs.audio;
    auto forward = [&] { model.forward(&video, &audio); };
    cuda_time_each(device.index, opt.warmup, forward);
    const double ms = median(cuda_time_each(device.index, opt.iterations, forward));
    const size_t peak = cuda_memory_stats(device.index).peak_allocated;

    // Breakdown: attention per site inside one forward; every linear alone at its shape.
    attention->ms.clear();
    attention->timing = true;
    forward();
    attention->timing = false;
    const Workload work = workload(weights, config.num_layers, tv, kAudioTokens, kTextTokens);
    double attention_ms = 0, linear_ms = 0;
    double best_linear_tflops = 0;  // the fastest linear of this forward, alone at its shape
    std::string best_linear_shape;
    json sites = json::object();
    for (const auto& [site, t] : attention->ms) {
      sites[tr::attention_site_name(site)] = t;
      attention_ms += t;
    }
    for (size_t i = 0; i < work.linears.size(); ++i) {
      const LinearUse& u = work.linears[i];
      if (!u.w->weight.defined()) continue;
      const Tensor x = random_bf16({u.rows, u.w->weight.size(1)}, 5, 1.f, device);
      const double one = median(cuda_time_each(device.index, 3, [&] { tr::apply_linear(x, *u.w); }));
      linear_ms += (i < work.block_linears ? config.num_layers : 1) * one;
      const double rate = 2.0 * u.rows * u.w->weight.size(0) * u.w->weight.size(1) / (one * 1e-3) / 1e12;
      if (rate > best_linear_tflops) {
        best_linear_tflops = rate;
        best_linear_shape = fmt::format("{}x{}x{}", u.rows, u.w->weight.size(1), u.w->weight.size(0));
      }
    }

    const double rope_ms = video_rope_ms(config, video.positions, device.index);
    const double tflops = work.flops / (ms * 1e-3) / 1e12, ref = reference_ms(opt.model, shape_name);
    std::printf("%-6s %-7s %8lld %10.1f %9.1f %5.1f%% %9.2f %8.0f %9.3f\n", opt.model.c_str(),
                shape_name.c_str(), static_cast<long long>(tv), ms, tflops, 100 * tflops / opt.peak_tflops,
                gib(peak), ref, ms / ref);
    std::printf(
        "  breakdown: attention %.1f ms (in the forward), linears %.1f ms (each alone at its shape), "
        "rest %.1f ms; %.1f TFLOP\n",
        attention_ms, linear_ms, ms - attention_ms - linear_ms, work.flops / 1e12);
    // The roofline of this forward on this GPU: every linear at the best GEMM rate measured here,
    // attention at its kernel's measured time, nothing else; what the forward takes beyond it is the
    // linears' shape losses and the memory-bound passes between them.
    const double linear_bound_ms = work.linear_flops / (best_linear_tflops * 1e12) * 1e3;
    const double roofline_ms = linear_bound_ms + attention_ms;
    std::printf(
        "  roofline: linears %.1f ms at the best GEMM rate measured here (%.0f TFLOP/s, %s) + attention "
        "%.1f ms = %.1f ms; the forward is %.2fx it (%.1f ms over: %.1f in the linears' shapes, %.1f "
        "between the ops)\n",
        linear_bound_ms, best_linear_tflops, best_linear_shape.c_str(), attention_ms, roofline_ms,
        ms / roofline_ms, ms - roofline_ms, linear_ms - linear_bound_ms, ms - attention_ms - linear_ms);
    std::printf("  the video RoPE tables take %.2f ms on the device per forward\n", rope_ms);
    for (const auto& [name, t] : sites.items())
      std::printf("    %-28s %8.1f ms\n", name.c_str(), t.get<double>());
    const json profile = opt.profile ? op_profile(device.index, forward) : json();
    // 8-bit attention: how far one forward's outputs are from the same forward in bf16 precision.
    json accuracy;
    if (precision != ops::AttentionPrecision::Bf16) {
      const tr::TransformerOutput eight = model.forward(&video, &audio);
      ops::set_attention_precision(ops::AttentionPrecision::Bf16);
      const tr::TransformerOutput bf16 = model.forward(&video, &audio);
      ops::set_attention_precision(precision);
      for (const auto& [name, got, want] :
           {std::tuple{"video", eight.video, bf16.video}, std::tuple{"audio", eight.audio, bf16.audio}}) {
        const Similarity sim = similarity(got, want);
        std::printf("  %s output against bf16 attention: relative L2 %.4f, cosine %.6f\n", name, sim.rel_l2,
                    sim.cosine);
        accuracy[name] = {{"rel_l2", sim.rel_l2}, {"cosine", sim.cosine}};
      }
    }
    rows.push_back({{"model", opt.model},
                    {"quantization", quantization_name(quantization)},
                    {"attention_precision", ops::attention_precision_name(precision)},
                    {"accuracy_against_bf16_attention", accuracy},
                    {"shape", shape_name},
                    {"video_tokens", tv},
                    {"audio_tokens", kAudioTokens},
                    {"text_tokens", kTextTokens},
                    {"layers", config.num_layers},
                    {"flops", work.flops},
                    {"median_ms", ms},
                    {"tflops", tflops},
                    {"mfu", tflops / opt.peak_tflops},
                    {"peak_allocated_gib", gib(peak)},
                    {"weights_gib", gib(weight_bytes)},
                    {"model_weights_gib", gib(model_bytes)},
                    {"reference_ms", ref},
                    {"ratio_to_reference", ms / ref},
                    {"attention_ms", attention_ms},
                    {"attention_ms_by_site", sites},
                    {"linear_ms_isolated", linear_ms},
                    {"linear_flops", work.linear_flops},
                    {"best_linear_tflops", best_linear_tflops},
                    {"best_linear_shape", best_linear_shape},
                    {"roofline_ms", roofline_ms},
                    {"device_video_rope_ms", rope_ms},
                    {"op_profile", profile}});
  }
  if (!opt.json_path.empty()) {
    json doc = {{"bench", "transformer"},
                {"device", opt.device},
                {"warmup", opt.warmup},
                {"iterations", opt.iterations},
                {"peak_tflops", opt.peak_tflops},
                {"weights", quantization == Quantization::None
                                ? "one block synthesized (bf16) and shared by every layer"
                                : fmt::format("one block synthesized (bf16), its q/k/v/out and feed-forward "
                                              "linears quantized to F8_E4M3 per {}, shared by every layer",
                                              quantization == Quantization::Fp8 ? "channel" : "tensor")},
                {"results", rows}};
    std::ofstream out(opt.json_path);
    LTX2_CHECK(out.good(), "ltx2 bench transformer: cannot write --json file '{}'", opt.json_path);
    out << doc.dump(2) << "\n";
  }
  ops::set_attention_precision(saved_precision);
  return 0;
}

}  // namespace ltx2
