// The text side on the GPU against the golden fixtures: Gemma 3 (gemma3_tiny, and a synthesized
// model with the 12B's attention shape against the CPU float32 run), Gemma 4 (gemma4_tiny, its
// packed text-encoder file), the embeddings processor with
// the 19B caption projections (connector_19b, connector_22b), and the pipeline's prompt encoder
// placed on the device (pipeline_distilled's prompt contexts).
//
// bf16: the golden README's rule (gpu_compare.h check_bf16_rule: at most 2x the naive bf16 error
// plus atol 1e-3). The naive bf16 computation: for Gemma and the pipeline's prompt encoder, the same
// model placed in bf16 on the CPU, where every op rounds its result to bf16 as the GPU's do
// (ops/cpu/bf16_widening.h; tests/unit/text checks that run stays within a few percent of the
// fixtures, so the rule can still fail); for the connector cases, our CPU float32 processor over the
// case's weights rounded to bf16, with bf16-rounded inputs and outputs (a lower bound of the
// rounding; the GPU stays within 2x of it there).
// f32: the GPU result meets the case's own float32 tolerance (|d| <= atol + rtol |ref|), as the CPU
// models do in golden_check (tests/golden). Every comparison prints its errors (ctest -V shows them).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "io/configs/gemma_config.h"
#include "io/layout.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "models/text/caption_projection.h"
#include "models/text/embeddings_processor.h"
#include "models/text/gemma3.h"
#include "models/text/gemma4.h"
#include "ops/shape.h"
#include "pipeline/pipeline_models.h"
#include "support/test_util.h"

using namespace ltx2;
using test::check_bf16_rule;
using test::round_bf16;

namespace {

struct GoldenFiles {
  std::string dir;
  nlohmann::json spec;
  std::shared_ptr<SafetensorsFile> io;
  std::shared_ptr<const WeightSet> weights;
};

GoldenFiles open_case(const std::string& name) {
  GoldenFiles g;
  g.dir = test::golden_dir(name);
  std::ifstream in(g.dir + "/case.json");
  g.spec = nlohmann::json::parse(in);
  g.io = SafetensorsFile::open(g.dir + "/io.safetensors");
  g.weights = WeightSet::open({g.dir + "/weights.safetensors"});
  return g;
}

// The case's weights rounded to bf16 (stored as bf16, widened again by the float32 loaders), with
// the same metadata, in `scratch`.
std::shared_ptr<const WeightSet> rounded_weights(const GoldenFiles& g, const test::ScratchDir& scratch) {
  auto file = SafetensorsFile::open(g.dir + "/weights.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TensorInfo& info : file->tensors()) {
    Tensor t = file->tensor(info.name);
    const bool floating = t.dtype() == DType::F32 || t.dtype() == DType::BF16 || t.dtype() == DType::F16;
    tensors.emplace_back(info.name, floating ? t.to(DType::F32).to(DType::BF16) : t);
  }
  const std::string path = scratch.file("weights_bf16.safetensors");
  write_safetensors(path, tensors, file->metadata());
  return WeightSet::open({path});
}

// Every element within atol + rtol * |ref| (NaN fails), on the host in float32.
void check_f32_tolerance(const std::string& what, const Tensor& got, const Tensor& ref,
                         const nlohmann::json& tol) {
  const double atol = tol.at("atol").get<double>(), rtol = tol.at("rtol").get<double>();
  REQUIRE(got.shape() == ref.shape());
  const auto g = test::to_host_f32(got).to_vector(), r = test::to_host_f32(ref).to_vector();
  double worst = 0;  // largest |d| / (atol + rtol |ref|)
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = std::fabs(double(g[i]) - double(r[i])) / (atol + rtol * std::fabs(double(r[i])));
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  std::printf("%s: f32 on the GPU, worst |d| / (atol + rtol |ref|) = %.4g\n", what.c_str(), worst);
  INFO(what << ": f32 on the GPU, worst |d| / (atol + rtol |ref|) = " << worst);
  CHECK(worst <= 1.0);
}

// ---- Gemma 3 ----

GemmaConfig gemma_config(const GoldenFiles& g) {
  return parse_gemma_config(g.weights->config().contains("text_config") ? g.weights->config()
                                                                        : g.spec.at("config_json"));
}

Gemma3TextModel gemma(const GemmaConfig& config, const std::shared_ptr<const WeightSet>& set, DType dtype,
                      Device device) {
  return Gemma3TextModel(
      config, WeightView(set, component_prefixes(Component::TextModel), "gemma text model"), dtype, device);
}

// The states on the host in float32, stacked [L + 1, B, T, D] with the pad rows zeroed (the
// fixture's out.hidden_states), and the last state.
struct GemmaOut {
  Tensor stacked, last;
};

GemmaOut gemma_outputs(const std::vector<Tensor>& states, const Tensor& mask, bool round) {
  const Tensor keep = mask.to(DType::F32).unsqueeze(-1);
  std::vector<Tensor> zeroed;
  for (const Tensor& s : states) {
    Tensor h = test::to_host_f32(s);
    if (round) h = round_bf16(h);
    zeroed.push_back(ops::mul(h, keep).unsqueeze(0));
  }
  Tensor last = test::to_host_f32(states.back());
  return {ops::cat(zeroed, 0), round ? round_bf16(last) : last};
}

// ---- embeddings processor ----

struct TextOut {
  Tensor video, audio, mask, video_projected, audio_projected;  // host f32; projections when recorded
};

// Runs the processor (and the case's caption projections) in `dtype` on `device` over `set`, on the
// case's hidden states moved there in `dtype` (rounded to bf16 first when `round_inputs`).
TextOut run_processor(const GoldenFiles& g, const std::shared_ptr<const WeightSet>& set, DType dtype,
                      Device device, bool round_inputs) {
  const EmbeddingsProcessor processor(set, dtype, device);
  const Tensor all = g.io->tensor("in.hidden_states"), mask = g.io->tensor("in.attention_mask");
  std::vector<Tensor> states;
  for (int64_t l = 0; l < all.size(0); ++l) {
    const Tensor s = all.select(0, l).contiguous();
    states.push_back(round_inputs ? round_bf16(s).to(device).to(dtype) : s.to(device).to(dtype));
  }
  const TextContext ctx = processor.process(states, mask);
  REQUIRE(ctx.video.device() == device);
  REQUIRE(ctx.video.dtype() == dtype);
  TextOut out{test::to_host_f32(ctx.video), test::to_host_f32(ctx.audio), ctx.mask.to(DType::F32), {}, {}};
  const TextProjectionConfig& config = processor.config();
  const WeightView dit(set, component_prefixes(Component::Transformer), "transformer");
  if (g.io->contains("out.video_context_projected"))
    out.video_projected =
        test::to_host_f32(CaptionProjection(dit.sub("caption_projection."), config.caption_channels,
                                            config.video_inner, dtype, device)
                              .forward(ctx.video));
  if (g.io->contains("out.audio_context_projected"))
    out.audio_projected =
        test::to_host_f32(CaptionProjection(dit.sub("audio_caption_projection."), config.caption_channels,
                                            config.audio_inner, dtype, device)
                              .forward(ctx.audio));
  return out;
}

std::vector<std::pair<std::string, Tensor TextOut::*>> text_outputs() {
  return {{"out.video_encoding", &TextOut::video},
          {"out.audio_encoding", &TextOut::audio},
          {"out.video_context_projected", &TextOut::video_projected},
          {"out.audio_context_projected", &TextOut::audio_projected}};
}

void check_connector_bf16(const std::string& name) {
  INFO(name);
  const GoldenFiles g = open_case(name);
  const test::ScratchDir scratch("gpu_text_" + name);
  const TextOut naive = run_processor(g, rounded_weights(g, scratch), DType::F32, Device::cpu(), true);
  const TextOut gpu = run_processor(g, g.weights, DType::BF16, test::gpu(), false);
  for (const auto& [key, field] : text_outputs()) {
    if (!g.io->contains(key)) continue;
    check_bf16_rule(name + " " + key, gpu.*field, round_bf16(naive.*field), g.io->tensor(key));
  }
  CHECK(test::max_error(gpu.mask, g.io->tensor("out.attention_mask").to(DType::F32)) == 0.0);
}

void check_connector_f32(const std::string& name) {
  INFO(name);
  const GoldenFiles g = open_case(name);
  const TextOut gpu = run_processor(g, g.weights, DType::F32, test::gpu(), false);
  for (const auto& [key, field] : text_outputs()) {
    if (!g.io->contains(key)) continue;
    check_f32_tolerance(name + " " + key, gpu.*field, g.io->tensor(key), g.spec.at("tolerance"));
  }
  CHECK(test::max_error(gpu.mask, g.io->tensor("out.attention_mask").to(DType::F32)) == 0.0);
}

}  // namespace

TEST_CASE("gpu: gemma3_tiny hidden states in bf16 (2x rule)") {
  const GoldenFiles g = open_case("gemma3_tiny");
  const GemmaConfig config = gemma_config(g);
  const Tensor ids = g.io->tensor("in.input_ids"), mask = g.io->tensor("in.attention_mask");

  const std::vector<Tensor> states = gemma(config, g.weights, DType::BF16, test::gpu()).forward(ids, mask);
  REQUIRE(states.size() == static_cast<size_t>(config.num_layers + 1));
  REQUIRE(states.front().device() == test::gpu());
  REQUIRE(states.back().dtype() == DType::BF16);
  const GemmaOut gpu = gemma_outputs(states, mask, false);
  // The naive bf16 run: the model placed in bf16 on the CPU, every op rounding its result as the
  // GPU's do (ops/cpu/bf16_widening.h).
  const GemmaOut naive =
      gemma_outputs(gemma(config, g.weights, DType::BF16, Device::cpu()).forward(ids, mask), mask, false);
  check_bf16_rule("gemma3_tiny out.hidden_states", gpu.stacked, naive.stacked,
                  g.io->tensor("out.hidden_states"));
  check_bf16_rule("gemma3_tiny out.last_hidden_state", gpu.last, naive.last,
                  g.io->tensor("out.last_hidden_state"));
}

TEST_CASE("gpu: gemma3_tiny hidden states in f32 (the case's tolerance)") {
  const GoldenFiles g = open_case("gemma3_tiny");
  const Tensor ids = g.io->tensor("in.input_ids"), mask = g.io->tensor("in.attention_mask");
  const std::vector<Tensor> states =
      gemma(gemma_config(g), g.weights, DType::F32, test::gpu()).forward(ids, mask);
  REQUIRE(states.front().device() == test::gpu());
  const GemmaOut gpu = gemma_outputs(states, mask, false);
  check_f32_tolerance("gemma3_tiny out.hidden_states", gpu.stacked, g.io->tensor("out.hidden_states"),
                      g.spec.at("tolerance"));
  check_f32_tolerance("gemma3_tiny out.last_hidden_state", gpu.last, g.io->tensor("out.last_hidden_state"),
                      g.spec.at("tolerance"));
}

TEST_CASE("gpu: gemma4_tiny hidden states in bf16 (2x rule) and f32 (the case's tolerance)") {
  const std::string dir = test::golden_dir("gemma4_tiny");
  std::ifstream in(dir + "/case.json");
  const nlohmann::json spec = nlohmann::json::parse(in);
  auto io = SafetensorsFile::open(dir + "/io.safetensors");
  const Tensor ids = io->tensor("in.input_ids"), mask = io->tensor("in.attention_mask");
  auto run = [&](DType dtype, Device device) {
    const std::vector<Tensor> states =
        Gemma4TextModel::open(dir + "/text_encoder.safetensors", dtype, device)->forward(ids, mask);
    REQUIRE(states.front().device() == device);
    REQUIRE(states.back().dtype() == dtype);
    return gemma_outputs(states, mask, false);
  };
  // The fixture keeps the pad rows' states; the comparison, like gemma_outputs, zeroes them.
  const Tensor want = ops::mul(io->tensor("out.hidden_states"), mask.to(DType::F32).unsqueeze(-1));
  // The naive bf16 run: the model placed in bf16 on the CPU (ops/cpu/bf16_widening.h).
  const GemmaOut gpu = run(DType::BF16, test::gpu()), naive = run(DType::BF16, Device::cpu());
  check_bf16_rule("gemma4_tiny out.hidden_states", gpu.stacked, naive.stacked, want);
  check_bf16_rule("gemma4_tiny out.last_hidden_state", gpu.last, naive.last,
                  io->tensor("out.last_hidden_state"));
  check_f32_tolerance("gemma4_tiny out.hidden_states", run(DType::F32, test::gpu()).stacked, want,
                      spec.at("tolerance"));
}

TEST_CASE(
    "gpu: a Gemma 3 with the 12B's attention shape (head dim 256, grouped KV heads) in bf16 (2x rule)") {
  // gemma3_tiny's head dim 16 takes the composed attention path; this model has the 12B's head dim
  // 256 and query_pre_attn_scalar, two query heads per KV head, a sliding and a full layer, and
  // synthesized weights (the same ones for every placement: the synthesizer answers a name with
  // the tensor it made first). B = 2 with the second prompt left-padded, as the pipelines pad.
  GemmaConfig config;
  config.vocab_size = 384;
  config.hidden_size = 128;
  config.intermediate_size = 256;
  config.num_layers = 2;
  config.num_heads = 4;
  config.num_kv_heads = 2;
  config.head_dim = 256;
  config.query_pre_attn_scalar = 256;
  config.rms_norm_eps = 1e-6;
  config.sliding_window = 48;
  config.layer_is_sliding = {true, false};
  config.rope_global_theta = 1e6;
  config.rope_global_linear_factor = 8;
  config.rope_local_theta = 1e4;
  const auto synth = std::make_shared<WeightSynthesizer>(12);
  const WeightView weights(synth, "", "gemma text model");
  const int64_t T = 150, pad = 41;
  std::vector<int64_t> ids(2 * T), keep(2 * T, 1);
  for (int64_t i = 0; i < 2 * T; ++i) ids[i] = 1 + (i * 7919) % (config.vocab_size - 1);
  for (int64_t i = 0; i < pad; ++i) keep[T + i] = 0;
  const Tensor id_tensor = Tensor::from_vector_i64(ids, {2, T}), mask = Tensor::from_vector_i64(keep, {2, T});

  auto states = [&](DType dtype, Device device) {
    return gemma_outputs(Gemma3TextModel(config, weights, dtype, device).forward(id_tensor, mask), mask,
                         false);
  };
  const GemmaOut ref = states(DType::F32, Device::cpu());
  const GemmaOut naive = states(DType::BF16, Device::cpu());
  const GemmaOut gpu = states(DType::BF16, test::gpu());
  check_bf16_rule("gemma head dim 256 out.hidden_states", gpu.stacked, naive.stacked, ref.stacked);
  // Every row, the pad rows included (their attention output is zeroed by Gemma's "sees a key"
  // factor on every backend).
  check_bf16_rule("gemma head dim 256 out.last_hidden_state", gpu.last, naive.last, ref.last);
}

TEST_CASE("gpu: connector_19b and connector_22b in bf16 (2x rule)") {
  check_connector_bf16("connector_19b");
  check_connector_bf16("connector_22b");
}

TEST_CASE("gpu: connector_19b and connector_22b in f32 (the case's tolerance)") {
  check_connector_f32("connector_19b");
  check_connector_f32("connector_22b");
}

TEST_CASE("gpu: the pipeline's prompt encoder on the device (pipeline_distilled prompt, 2x rule)") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  std::ifstream in(dir + "/case.json");
  const nlohmann::json spec = nlohmann::json::parse(in);
  const auto io = SafetensorsFile::open(dir + "/io.safetensors");
  ModelPaths paths = test::fixture_model_paths(dir);
  pipeline::PipelineOptions options;
  options.device = test::gpu();
  options.transformer_dtype = DType::BF16;
  options.text_encoder_on_device = true;
  const auto models = pipeline::PipelineModels::load(paths, PipelineKind::Distilled, options);
  const std::string prompt = spec.at("prompt").get<std::string>();
  const EncodedPrompt gpu = models->text->encode({prompt}).at(0);
  REQUIRE(gpu.video_context.device() == test::gpu());
  REQUIRE(gpu.video_context.dtype() == DType::BF16);
  REQUIRE(gpu.audio_context.device() == test::gpu());

  // The naive bf16 run: the same encoder placed in bf16 on the CPU (every op rounding its result).
  const PromptEncoder cpu(paths.gemma_root, WeightSet::open({paths.checkpoint}), kGemmaTokenizerMaxLength,
                          DType::BF16, Device::cpu());
  const EncodedPrompt naive = cpu.encode({prompt}).at(0);
  REQUIRE(gpu.tokens.ids == naive.tokens.ids);
  check_bf16_rule("pipeline_distilled out.text.prompt.video_context", gpu.video_context,
                  naive.video_context.to(DType::F32), io->tensor("out.text.prompt.video_context"));
  check_bf16_rule("pipeline_distilled out.text.prompt.audio_context", gpu.audio_context,
                  naive.audio_context.to(DType::F32), io->tensor("out.text.prompt.audio_context"));
}

// Prompt enhancement's decoding on the device: the enhance_prompt case's chat and generated tokens
// fed through the key/value cache (the chat at once, then a token a step, as greedy decoding feeds
// them), the logits of every step against the case's float32 ones; in bf16 by the 2x rule (the naive
// run: the same model and cache in bf16 on the CPU), in float32 by the case's logits tolerance.
TEST_CASE("gpu: Gemma's cached decoding (prompt enhancement) gives the reference's logits, bf16 and f32") {
  const std::string dir = test::golden_dir("enhance_prompt");
  std::ifstream in(dir + "/case.json");
  const nlohmann::json spec = nlohmann::json::parse(in);
  auto io = SafetensorsFile::open(dir + "/io.safetensors");
  const std::string folder = test::golden_dir(spec.at("models_from").get<std::string>()) + "/gemma";
  std::vector<int64_t> chat;
  const std::vector<int64_t> ids = io->tensor("out.enhance.input_ids").contiguous().to_vector_i64();
  const std::vector<int64_t> mask = io->tensor("out.enhance.attention_mask").contiguous().to_vector_i64();
  for (size_t i = 0; i < ids.size(); ++i)
    if (mask[i]) chat.push_back(ids[i]);  // the reference's alignment pads are neither seen nor positions
  const std::vector<int64_t> generated = io->tensor("out.enhance.generated_ids").contiguous().to_vector_i64();
  auto teacher_forced = [&](DType dtype, Device device) {
    auto gemma = Gemma3TextModel::open(folder, dtype, device);
    auto cache = gemma->make_cache(static_cast<int64_t>(chat.size() + generated.size()));
    const Tensor head = gemma->lm_head();
    Tensor hidden = gemma->extend(chat, cache);
    std::vector<Tensor> logits;
    for (size_t step = 0; step < generated.size(); ++step) {
      logits.push_back(gemma->logits(hidden, head));
      if (step + 1 < generated.size()) hidden = gemma->extend({generated[step]}, cache);
    }
    REQUIRE(cache.keys.front().device() == device);
    return ops::cat(logits, 0);
  };
  const Tensor ref = io->tensor("mid.enhance.logits");
  check_bf16_rule("enhance_prompt mid.enhance.logits", teacher_forced(DType::BF16, test::gpu()),
                  teacher_forced(DType::BF16, Device::cpu()), ref);
  check_f32_tolerance("enhance_prompt mid.enhance.logits", teacher_forced(DType::F32, test::gpu()), ref,
                      spec.at("tolerance").at("logits"));
}
