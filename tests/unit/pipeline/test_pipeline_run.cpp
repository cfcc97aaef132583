// Pipeline run pieces: latent state and conditionings, noise sources, image preprocessing, LoRA
// switching on transformer weights, and request validation before any work.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "core/error.h"
#include "ops/rgb8.h"
#include "ops/shape.h"
#include "pipeline/denoise_stage.h"
#include "pipeline/generation_engine.h"
#include "pipeline/image_conditioning.h"
#include "pipeline/latent_state.h"
#include "pipeline/noise_source.h"
#include "pipeline/pipeline.h"
#include "pipeline/schedulers.h"
#include "pipeline/transformer_loras.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::pipeline;
using models::transformer::round_to_f8e4m3;

TEST_CASE("latent state: latent-index conditioning keeps the image tokens through the noiser") {
  LatentState s = create_video_state({1, 4, 3, 2, 2}, 24.0);
  REQUIRE(s.latent.shape() == Shape{1, 12, 4});
  const Tensor image = test::random_tensor({1, 4, 1, 2, 2}, 3);
  apply_conditioning(s, VideoConditionByLatentIndex{image, 1.0f, 1}, {3, 2, 2}, 24.0);
  apply_noise(s, test::random_tensor({1, 12, 4}, 4), 1.0f);
  // Tokens 4..7 (latent frame 1) are the image's, mask 0, timestep 0; others stay noise.
  const Tensor tokens = s.latent.narrow(1, 4, 4);
  REQUIRE(test::max_abs_diff(tokens, image.reshape({1, 4, 4}).transpose(1, 2).contiguous()) == 0.0f);
  REQUIRE(state_timesteps(s, 0.5f).item({0, 5, 0}) == 0.0f);
  REQUIRE(state_timesteps(s, 0.5f).item({0, 0, 0}) == 0.5f);
  REQUIRE(test::max_abs_diff(s.latent.narrow(1, 0, 4), test::random_tensor({1, 12, 4}, 4).narrow(1, 0, 4)) ==
          0.0f);
}

TEST_CASE("latent state: keyframe tokens are appended at their frame and removed after the loop") {
  LatentState s = create_video_state({1, 4, 2, 2, 2}, 24.0);
  apply_conditioning(s, VideoConditionByKeyframeIndex{test::random_tensor({1, 4, 1, 2, 2}, 5), 8, 0.5f},
                     {2, 2, 2}, 24.0);
  REQUIRE(s.latent.size(1) == 12);
  REQUIRE(s.positions.size(2) == 12);
  REQUIRE(s.denoise_mask.item({0, 11, 0}) == 0.5f);
  REQUIRE(s.latent.item({0, 10, 1}) == 0.0f);
  REQUIRE(s.positions.item({0, 0, 8, 0}) == Approx(8.0 / 24.0));
  clear_conditioning(s);
  REQUIRE(s.latent.size(1) == 8);
  REQUIRE(s.positions.size(2) == 8);
  REQUIRE(s.keyframes_mask.size(1) == 8);
}

TEST_CASE("noise: a Philox draw does not depend on how it is sliced, recorded draws replay in order") {
  PhiloxNoiseSource a(7), b(7);
  const Tensor whole = a.draw(NoiseDraw::Stage2Video, {1, 5, 16});
  NoiseGenerator gen(7);
  std::vector<float> pieces(80);
  gen.fill(static_cast<uint64_t>(NoiseDraw::Stage2Video), 0, 13, pieces.data());
  gen.fill(static_cast<uint64_t>(NoiseDraw::Stage2Video), 13, 50, pieces.data() + 13);
  gen.fill(static_cast<uint64_t>(NoiseDraw::Stage2Video), 63, 17, pieces.data() + 63);
  REQUIRE(whole.to_vector() == pieces);
  REQUIRE(b.draw(NoiseDraw::Stage2Video, {1, 5, 16}).to_vector() == pieces);
  REQUIRE(a.draw(NoiseDraw::Stage1Video, {1, 5, 16}).to_vector() != pieces);

  RecordedNoiseSource rec({test::random_tensor({1, 2, 3}, 1), test::random_tensor({1, 4, 3}, 2)});
  REQUIRE(test::max_abs_diff(rec.draw(NoiseDraw::Stage1Video, {1, 2, 3}),
                             test::random_tensor({1, 2, 3}, 1)) == 0.0f);
  REQUIRE_THROWS_WITH(rec.draw(NoiseDraw::Stage1Audio, {1, 2, 3}), Catch::Matchers::Contains("needs"));
}

TEST_CASE("image conditioning: cover resize, centre crop and [-1, 1] range") {
  // 2 x 4 image to 2 x 2: scale 1 (no resize), columns 1..2 kept.
  std::vector<float> v;
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 3; ++c) v.push_back(static_cast<float>(y * 100 + x * 10 + c));
  const Tensor out = preprocess_image(Tensor::from_vector(v, {2, 4, 3}), 2, 2);
  REQUIRE(out.shape() == Shape{1, 3, 1, 2, 2});
  REQUIRE(out.item({0, 2, 0, 1, 0}) == Approx(112.0 / 127.5 - 1.0));
  // A constant image stays constant when upscaled.
  const Tensor grey = preprocess_image(Tensor::full({3, 5, 3}, 127.5f), 8, 8);
  REQUIRE(test::max_abs_diff(grey, Tensor::zeros({1, 3, 1, 8, 8})) < 1e-6f);
  REQUIRE(resolved_image_crf({"x.png", 0, 1.0, -1}, {2, 3}) == 33);
  REQUIRE(resolved_image_crf({"x.png", 0, 1.0, -1}, {2, 4}) == 18);
  REQUIRE(resolved_image_crf({"x.png", 0, 1.0, 0}, {2, 5}) == 0);
  REQUIRE(resolved_image_crf({"x.png", 0, 1.0, 25}, {2, 0}) == 25);
  REQUIRE_NOTHROW(check_image_crf({"x.png", 0, 1.0, 0}, {2, 5}));
#ifndef LTX2_WITH_MEDIA
  // Without FFmpeg a re-compression is refused before any work, saying how to do without it.
  REQUIRE_THROWS_WITH(check_image_crf({"x.png", 0, 1.0, -1}, {2, 3}),
                      Catch::Matchers::Contains("pass crf 0"));
#endif
}

namespace {

// A rank-2 LoRA (file name `name`) on block 0's video self-attention to_q of a 4-wide model.
std::shared_ptr<LoraWeights> to_q_lora(const std::string& name) {
  return std::make_shared<LoraWeights>(lora_from_tensors(
      {{"diffusion_model.transformer_blocks.0.attn1.to_q.lora_A.weight", test::random_tensor({2, 4}, 11)},
       {"diffusion_model.transformer_blocks.0.attn1.to_q.lora_B.weight", test::random_tensor({4, 2}, 12)}},
      name));
}

}  // namespace

TEST_CASE("transformer loras: fused for a stage, the clean weights restored bit for bit") {
  models::transformer::TransformerWeights w;
  w.blocks.resize(1);
  const Tensor clean = test::random_tensor({4, 4}, 9);
  w.blocks[0].video_self.to_q.weight = clean;
  w.blocks[0].video_self.to_k.weight = test::random_tensor({4, 4}, 10);
  TransformerLoras loras(std::move(w));
  REQUIRE(loras.by_name().count("transformer_blocks.0.attn1.to_q.weight") == 1);
  auto lora = to_q_lora("test");
  loras.fuse({{lora, 1.0f}});
  REQUIRE(loras.fused());
  REQUIRE(test::max_abs_diff(loras.weights().blocks[0].video_self.to_q.weight, clean) > 0.01f);
  REQUIRE(loras.weights().blocks[0].video_self.to_k.weight.shares_storage(
      loras.by_name().at("transformer_blocks.0.attn1.to_k.weight")));
  // A stage's extra LoRA on top, then back to the same fused tensors without recomputing them.
  const Tensor user_fused = loras.weights().blocks[0].video_self.to_q.weight;
  loras.push_stage({{lora, 0.5f}});
  REQUIRE(test::max_abs_diff(loras.weights().blocks[0].video_self.to_q.weight, user_fused) > 0.001f);
  REQUIRE_THROWS_WITH(loras.push_stage({{lora, 0.5f}}), Catch::Matchers::Contains("already"));
  loras.pop_stage();
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight.shares_storage(user_fused));
  loras.restore();
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight.shares_storage(clean));
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight.to_vector() == clean.to_vector());
}

TEST_CASE("transformer loras: with fp8-cast the fused F8_E4M3-held weights are rounded back to F8_E4M3") {
  models::transformer::TransformerWeights w;
  w.blocks.resize(1);
  const Tensor clean_q = round_to_f8e4m3(test::random_tensor({4, 4}, 9));
  const Tensor clean_gate = test::random_tensor({2, 4}, 10);
  w.blocks[0].video_self.to_q.weight = clean_q;
  w.blocks[0].video_self.to_gate_logits.weight = clean_gate;
  TransformerLoras loras(std::move(w), Quantization::Fp8Cast);
  auto lora = std::make_shared<LoraWeights>(lora_from_tensors(
      {{"diffusion_model.transformer_blocks.0.attn1.to_q.lora_A.weight", test::random_tensor({2, 4}, 11)},
       {"diffusion_model.transformer_blocks.0.attn1.to_q.lora_B.weight", test::random_tensor({4, 2}, 12)},
       {"diffusion_model.transformer_blocks.0.attn1.to_gate_logits.lora_A.weight",
        test::random_tensor({2, 4}, 13)},
       {"diffusion_model.transformer_blocks.0.attn1.to_gate_logits.lora_B.weight",
        test::random_tensor({2, 2}, 14)}},
      "test"));
  loras.fuse({{lora, 1.0f}});
  const Tensor q = loras.weights().blocks[0].video_self.to_q.weight;
  const Tensor gate = loras.weights().blocks[0].video_self.to_gate_logits.weight;
  // to_q: bf16(D + W) rounded to F8_E4M3 (the reference's fp8-cast fuse rule, rounding to nearest).
  const LoraPair& q_pair = lora->pairs.at("transformer_blocks.0.attn1.to_q.weight");
  REQUIRE(test::max_abs_diff(q, clean_q) > 0.01f);
  REQUIRE(q.to_vector() == round_to_f8e4m3(fuse_lora_weight(clean_q, {{&q_pair, 1.0f}}, "to_q")).to_vector());
  // The gate logits are not held in F8_E4M3: plain bf16 fusion.
  REQUIRE(gate.to_vector() ==
          fuse_lora_weight(clean_gate,
                           {{&lora->pairs.at("transformer_blocks.0.attn1.to_gate_logits.weight"), 1.0f}},
                           "gate")
              .to_vector());
  loras.restore();
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight.shares_storage(clean_q));
}

TEST_CASE("transformer loras: with fp8-scaled-mm an FP8-held weight is fused and re-quantized per tensor") {
  models::transformer::TransformerWeights w;
  w.blocks.resize(1);
  const Tensor clean_q = test::random_tensor({4, 4}, 9).to(DType::F8E4M3), clean_scale = Tensor::scalar(0.5f);
  w.blocks[0].video_self.to_q.weight = clean_q;
  w.blocks[0].video_self.to_q.weight_scale = clean_scale;
  w.blocks[0].video_self.to_q.input_scale = Tensor::scalar(1.f);
  TransformerLoras loras(std::move(w), Quantization::Fp8ScaledMm);
  auto lora = to_q_lora("style.safetensors");
  loras.fuse({{lora, 0.7f}});
  const auto& q = loras.weights().blocks[0].video_self.to_q;
  REQUIRE(q.weight.dtype() == DType::F8E4M3);
  // The reference's rule written out: W' = float(w8) x 0.5 + D (D as the bf16 rule's, here
  // fuse_lora_weight of a zero weight is exactly D), s = 448 / max|W'|, w8' = e4m3(W' x s).
  const LoraPair& pair = lora->pairs.at("transformer_blocks.0.attn1.to_q.weight");
  const Tensor delta = fuse_lora_weight(Tensor::zeros({4, 4}), {{&pair, 0.7f}}, "to_q");
  const std::vector<float> d = delta.to_vector(), w8 = clean_q.to(DType::F32).to_vector();
  std::vector<float> fused(16);
  float amax = 0;
  for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(fused[i] = w8[i] * 0.5f + d[i]));
  const float s = 448.f / amax;
  REQUIRE(q.weight_scale.item() == 1.f / s);
  const std::vector<float> got = q.weight.to(DType::F32).to_vector();
  for (int i = 0; i < 16; ++i) REQUIRE(got[i] == f8e4m3_to_f32(f32_to_f8e4m3(fused[i] * s)));
  REQUIRE(q.input_scale.item() == 1.f);
  // Both the weight and its scale come back as they were.
  loras.restore();
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight.shares_storage(clean_q));
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight_scale.shares_storage(clean_scale));
}

TEST_CASE("transformer loras: with fp8 a per-channel FP8 weight is fused and re-quantized per channel") {
  models::transformer::TransformerWeights w;
  w.blocks.resize(1);
  const auto clean = models::transformer::quantize_f8e4m3_per_channel(test::random_tensor({4, 4}, 9), "to_q");
  w.blocks[0].video_self.to_q.weight = clean.weight;
  w.blocks[0].video_self.to_q.weight_scale = clean.scale;
  TransformerLoras loras(std::move(w), Quantization::Fp8);
  auto lora = to_q_lora("style.safetensors");
  loras.fuse({{lora, 0.7f}});
  const auto& q = loras.weights().blocks[0].video_self.to_q;
  REQUIRE(q.weight.dtype() == DType::F8E4M3);
  REQUIRE(q.weight_scale.shape() == Shape{4});
  // Written out: W' = float(w8) x scale[row] + D, then each row's s = max|W'[row]| / 448 and
  // w8' = e4m3(W' / s).
  const LoraPair& pair = lora->pairs.at("transformer_blocks.0.attn1.to_q.weight");
  const std::vector<float> d = fuse_lora_weight(Tensor::zeros({4, 4}), {{&pair, 0.7f}}, "to_q").to_vector();
  const std::vector<float> w8 = clean.weight.to(DType::F32).to_vector(), scale = clean.scale.to_vector();
  const std::vector<float> got = q.weight.to(DType::F32).to_vector(), got_scale = q.weight_scale.to_vector();
  for (int r = 0; r < 4; ++r) {
    float fused[4], amax = 0;
    for (int c = 0; c < 4; ++c)
      amax = std::max(amax, std::fabs(fused[c] = w8[r * 4 + c] * scale[r] + d[r * 4 + c]));
    const float s = amax * (1.f / 448.f);
    REQUIRE(got_scale[r] == s);
    for (int c = 0; c < 4; ++c) REQUIRE(got[r * 4 + c] == f8e4m3_to_f32(f32_to_f8e4m3(fused[c] * (1.f / s))));
  }
  // Both the weight and its scales come back as they were.
  loras.restore();
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight.shares_storage(clean.weight));
  REQUIRE(loras.weights().blocks[0].video_self.to_q.weight_scale.shares_storage(clean.scale));
}

TEST_CASE("version defaults follow the checkpoint's model_version as the reference's detect_params does") {
  const auto check = [](const std::vector<int>& version, int steps, std::vector<int> blocks, int crf) {
    const VersionDefaults d = version_defaults(version);
    CHECK(d.num_inference_steps == steps);
    CHECK(d.stg_blocks == blocks);
    CHECK(d.image_crf == crf);
  };
  check({}, 40, {29}, 33);  // no model_version: LTX-2.0's
  check({2, 0, 0}, 40, {29}, 33);
  check({2, 2, 9}, 40, {29}, 33);
  check({2, 3}, 30, {28}, 33);
  check({2, 3, 0}, 30, {28}, 33);
  check({2, 4, 1}, 30, {28}, 18);  // 2.4 inherits 2.3's steps and blocks, its own CRF
  check({3}, 30, {28}, 18);        // a newer version the closest known one's
  CHECK(default_video_guidance().stg_blocks == std::vector<int>{28});
  CHECK(default_audio_guidance().stg_blocks == std::vector<int>{28});
}

TEST_CASE("engine: a request that fails validation does no work") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  ModelPaths paths = test::fixture_model_paths(dir);
  const auto engine = make_local_engine(PipelineKind::Distilled, paths);
  GenerationRequest r;
  r.prompt = "a fox";
  r.height = 128;
  r.width = 192;
  r.num_frames = 10;  // not 8k + 1
  test::ScratchDir out("pipeline_validation");
  r.output_path = out.file("o.mp4");
  int calls = 0;
  PipelineCallbacks cb;
  cb.probe = [&](const std::string&, const Tensor&) { ++calls; };
  cb.progress = [&](const std::string&, int, int) { ++calls; };
  REQUIRE_THROWS_WITH(engine->generate(r, cb), Catch::Matchers::Contains("--num-frames must be 8k+1"));
  REQUIRE(calls == 0);
  // The engine reports its output's format from the model's metadata.
  const OutputFormat format = engine->output_format(r);
  CHECK(format.frame_rate == r.frame_rate);
  CHECK(format.audio_sample_rate == engine->model_facts().vocoder_sample_rate);
  CHECK(format.audio_sample_rate > 0);
}

namespace {
// The pipeline_ti2vid fixture's models with its distilled LoRA, and a small request that runs every
// guidance pass (cfg, STG and modality guidance on).
ModelPaths ti2vid_fixture_paths() {
  const std::string dir = test::golden_dir("pipeline_ti2vid");
  ModelPaths paths = test::fixture_model_paths(dir);
  paths.distilled_loras = {{dir + "/distilled_lora.safetensors", 1.0}};
  return paths;
}

GenerationRequest fully_guided_request(const std::string& output_path) {
  GenerationRequest r;
  r.prompt = "a fox in the snow";
  r.negative_prompt = "blurry";
  r.height = 128;
  r.width = 192;
  r.num_frames = 9;
  r.num_inference_steps = 2;
  r.video_guidance = {3.0, 1.0, 0.7, 3.0, 0, {1}};
  r.audio_guidance = {7.0, 1.0, 0.7, 3.0, 0, {0}};
  r.output_path = output_path;
  return r;
}
}  // namespace

TEST_CASE(
    "two-stage pipeline: stage 2 fuses the distilled LoRA and the clean weights come back bit for bit") {
  const std::string dir = test::golden_dir("pipeline_ti2vid");
  TwoStagePipeline pipe(ti2vid_fixture_paths());
  const WeightMap before = pipe.models().transformer_weights->by_name();
  test::ScratchDir out("pipeline_two_stage");
  GenerationRequest r = fully_guided_request(out.file("o.mp4"));
#ifdef LTX2_WITH_MEDIA
  const int crf = -1;  // the model default CRF: an H.264 round trip
#else
  const int crf = 0;  // a build without FFmpeg refuses the round trip (request tests check that message)
#endif
  r.images.push_back({dir + "/image.png", 0, 1.0, crf});

  std::vector<std::string> progress;
  int64_t frames = 0, samples = 0;
  bool stage2_fused = false;
  PipelineCallbacks cb;
  cb.progress = [&](const std::string& stage, int step, int steps) {
    progress.push_back(stage + ":" + std::to_string(step) + "/" + std::to_string(steps));
    if (stage == "stage2") stage2_fused = pipe.models().transformer_weights->fused();
  };
  cb.video_chunk = [&](const Tensor& f) {
    REQUIRE(f.dim() == 4);
    REQUIRE(f.size(3) == 3);
    frames += f.size(0);
  };
  cb.audio = [&](const Tensor& wave, int64_t) { samples = wave.size(1); };
  pipe.run(r, cb);

  REQUIRE(progress == std::vector<std::string>{"text_encode:0/1", "stage1:0/2", "stage1:1/2", "upsample:0/1",
                                               "stage2:0/3", "stage2:1/3", "stage2:2/3", "video_decode:0/1"});
  REQUIRE(stage2_fused);
  REQUIRE(frames == 9);
  REQUIRE(samples > 0);
  const WeightMap& after = pipe.models().transformer_weights->by_name();
  REQUIRE(after.size() == before.size());
  for (const auto& [name, t] : before) REQUIRE(after.at(name).shares_storage(t));
}

// On the CPU every op is per sample (a row of a GEMM, a (sample, head) of attention), so batching
// the passes changes no bit.
TEST_CASE(
    "two-stage pipeline: guidance passes batched per call (--max-batch-size) give the one-pass results") {
  TwoStagePipeline pipe(ti2vid_fixture_paths());
  test::ScratchDir out("pipeline_batched_passes");
  GenerationRequest r = fully_guided_request(out.file("o.mp4"));
  const auto run = [&](int max_batch_size) {
    r.max_batch_size = max_batch_size;
    std::map<std::string, Tensor> probes;
    std::vector<Tensor> frames;
    PipelineCallbacks cb;
    cb.probe = [&](const std::string& name, const Tensor& t) {
      if (name.find(".pass_") != std::string::npos || name.find("denoised") != std::string::npos)
        probes[name] = t.clone();
    };
    cb.video_chunk = [&](const Tensor& f) { frames.push_back(f.clone()); };
    PhiloxNoiseSource philox(static_cast<uint64_t>(r.seed));
    pipe.run(r, cb, &philox);
    return std::pair{probes, frames};
  };
  const auto [one, one_frames] = run(1);
  REQUIRE(one.count("stage1.step0.video.pass_mod") == 1);  // every pass ran
  for (int batch : {2, 3, 4}) {
    INFO("--max-batch-size " << batch);
    const auto [many, many_frames] = run(batch);
    REQUIRE(many.size() == one.size());
    for (const auto& [name, t] : one) {
      INFO(name);
      CHECK(test::max_abs_diff(many.at(name), t) == 0.0f);
    }
    REQUIRE(many_frames.size() == one_frames.size());
    for (size_t i = 0; i < one_frames.size(); ++i)
      CHECK(test::max_abs_diff(many_frames[i], one_frames[i]) == 0.0f);
  }
}

TEST_CASE("pipeline models: model_version text to numbers") {
  REQUIRE(parse_model_version("2.5.0") == std::vector<int>{2, 5, 0});
  REQUIRE(parse_model_version("2-3-1") == std::vector<int>{2, 3, 1});
  REQUIRE(parse_model_version("2.4rc1.7") == std::vector<int>{2, 4, 7});
  REQUIRE(parse_model_version("").empty());
  REQUIRE(parse_model_version("2.x") == std::vector<int>{2});
}

namespace {
// Records which draws were asked for and answers zeros.
class CountingNoise : public LatentNoiseSource {
 public:
  Tensor draw(NoiseDraw which, const Shape& shape) override {
    draws.push_back(static_cast<uint64_t>(which));
    return Tensor::zeros(shape);
  }
  std::vector<uint64_t> draws;
};
}  // namespace

TEST_CASE("denoise stage: the ancestral loop draws video then audio per step and ends on the prediction") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  ModelPaths paths = test::fixture_model_paths(dir);
  const auto models = PipelineModels::load(paths, PipelineKind::Distilled, {});
  const models::transformer::Transformer transformer = models->transformer();
  const int64_t ctx = models->transformer_config.caption_channels;
  LatentState video = create_video_state({1, 128, 1, 2, 3}, 24.0);
  LatentState audio = create_audio_state({1, 8, 3, 16});
  apply_noise(video, test::random_tensor({1, 6, 128}, 1), 1.0f);
  apply_noise(audio, test::random_tensor({1, 3, 128}, 2), 1.0f);
  CountingNoise noise;
  DenoiseStage stage;
  stage.name = "s";
  stage.sigmas = {1.0f, 0.5f, 0.0f};
  stage.transformer = &transformer;
  stage.positive = {test::random_tensor({1, 8, ctx}, 3), test::random_tensor({1, 8, ctx}, 4)};
  stage.sampler = pipeline::Sampler::EulerAncestral;
  stage.step_noise = &noise;
  Tensor last_x0;
  PipelineCallbacks cb;
  cb.probe = [&](const std::string& name, const Tensor& t) {
    if (name == "s.step1.video.denoised") last_x0 = t;
  };
  run_denoise_stage(stage, video, audio, cb);
  REQUIRE(noise.draws == std::vector<uint64_t>{16, 17});
  REQUIRE(test::max_abs_diff(video.latent, last_x0) == 0.0f);
}

TEST_CASE("distilled pipeline: an injected video decode receives the AUTO tile plan and feeds the frames") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  ModelPaths paths = test::fixture_model_paths(dir);
  // Decodes whole and records how many tiles the pipeline's plan has.
  struct WholeDecode final : VideoDecodeExecutor {
    size_t tiles = 0;
    void decode(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                const video_vae::DecodeTilePlan& plan,
                const std::function<void(const Tensor&)>& on_chunk) override {
      tiles = plan.tiles.size();
      on_chunk(decoder.decode(latent, timestep));
    }
  };
  const auto decode = std::make_shared<WholeDecode>();
  PipelineOptions options;
  options.executors.video_decode = decode;
  DistilledPipeline pipe(paths, options);
  GenerationRequest r;
  r.prompt = "a fox";
  r.height = 128;
  r.width = 192;
  r.num_frames = 9;
  test::ScratchDir out("pipeline_decode");
  r.output_path = out.file("o.mp4");
  int64_t frames = 0;
  PipelineCallbacks cb;
  cb.video_chunk = [&](const Tensor& f) {
    frames += f.size(0);
    REQUIRE(f.size(1) == 128);
    REQUIRE(f.size(2) == 192);
  };
  pipe.run(r, cb);
  REQUIRE(decode->tiles == 1);
  REQUIRE(frames == 9);
}

TEST_CASE("distilled pipeline: a bf16 VAE side (vae_dtype) gives float32 host results and 8-bit frames") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  ModelPaths paths = test::fixture_model_paths(dir);
  test::ScratchDir out("pipeline_bf16_vae");
  GenerationRequest r;
  r.prompt = "a fox";
  r.height = 128;
  r.width = 192;
  r.num_frames = 9;
  r.output_path = out.file("o.mp4");
  struct Outputs {
    Tensor upsampled, frames, waveform;  // frames: the "video" probes (float32 in [0, 1])
    Tensor rgb8;                         // video_chunk's frames
  };
  auto run = [&](std::optional<DType> vae_dtype) {
    PipelineOptions options;
    options.vae_dtype = vae_dtype;
    DistilledPipeline pipe(paths, options);
    REQUIRE(pipe.models().video_decoder->dtype() == vae_dtype.value_or(DType::F32));
    Outputs o;
    std::vector<Tensor> chunks, probed;
    PipelineCallbacks cb;
    cb.video_chunk = [&](const Tensor& f) { chunks.push_back(f); };
    cb.audio = [&](const Tensor& w, int64_t) { o.waveform = w; };
    cb.probe = [&](const std::string& name, const Tensor& t) {
      if (name == "upsampled_video_latent") o.upsampled = t.clone();
      if (name == "video") probed.push_back(t.clone());
    };
    pipe.run(r, cb);
    o.frames = ops::cat(probed, 0);
    o.rgb8 = ops::cat(chunks, 0);
    return o;
  };
  const Outputs f32 = run(std::nullopt), bf16 = run(DType::BF16);
  for (const Outputs* o : {&f32, &bf16})
    for (const Tensor* t : {&o->upsampled, &o->frames, &o->waveform}) {
      REQUIRE(t->device().is_cpu());
      REQUIRE(t->dtype() == DType::F32);
    }
  // The 8-bit frames are the float frames scaled by 255 and truncated, value for value.
  for (const Outputs* o : {&f32, &bf16}) {
    REQUIRE(o->rgb8.device().is_cpu());
    REQUIRE(o->rgb8.dtype() == DType::U8);
    REQUIRE(o->rgb8.shape() == o->frames.shape());
    const std::vector<float> unit = o->frames.to_vector(), bytes = o->rgb8.to_vector();
    size_t mismatches = 0;
    for (size_t i = 0; i < unit.size(); ++i) mismatches += bytes[i] != ops::unit_to_u8(unit[i]);
    REQUIRE(mismatches == 0);
  }
  // The bf16 VAE side differs from the float32 one, but only by rounding (frames are in [0, 1]).
  const float frames_diff = test::max_abs_diff(bf16.frames, f32.frames);
  INFO("frames differ by " << frames_diff << ", upsampled latents by "
                           << test::max_abs_diff(bf16.upsampled, f32.upsampled));
  CHECK(frames_diff > 0.f);
  CHECK(frames_diff < 0.1f);
}

TEST_CASE("pipelines: each kind's stages are the reference's (stage_plan)") {
  GenerationRequest r;  // 1024 x 1536 x 121: stage 1 at 16 x 16 x 24 = 6,144 tokens
  r.num_frames = 121;
  r.num_inference_steps = 15;
  const auto lora = std::make_shared<const LoraWeights>();
  const std::vector<LoraWithStrength> one = {{lora, 1.0f}};

  const StagePlan distilled = stage_plan(PipelineKind::Distilled, r, {2, 3}, {});
  CHECK(distilled.stage1_sigmas == distilled_sigmas());
  CHECK_FALSE(distilled.guided_stage1);
  CHECK(distilled.refine);
  CHECK(distilled.stage1_sampler == Sampler::Euler);
  CHECK(stage_plan(PipelineKind::Distilled, r, {2, 5}, {}).stage1_sampler == Sampler::EulerAncestral);
  CHECK_FALSE(distilled.audio_from_stage1);

  const StagePlan two = stage_plan(PipelineKind::TwoStage, r, {2, 3}, one);
  CHECK(two.guided_stage1);
  CHECK(two.stage1_sigmas == ltx2_sigmas(15, 0));  // the 4096-token shift
  CHECK(two.stage1_loras.empty());
  CHECK(two.stage2_loras.size() == 1);
  CHECK(two.audio_from_stage1);
  CHECK(two.stage2_sampler == Sampler::Euler);

  const StagePlan keyframes = stage_plan(PipelineKind::Keyframes, r, {2, 3}, one);
  CHECK(keyframes.images_as_keyframes);
  CHECK(keyframes.stage2_loras.size() == 1);
  CHECK_FALSE(keyframes.audio_from_stage1);

  const StagePlan one_stage = stage_plan(PipelineKind::OneStage, r, {2, 3}, {});
  CHECK_FALSE(one_stage.refine);
  CHECK(one_stage.guided_stage1);
  CHECK(one_stage.stage2_loras.empty());

  const StagePlan hq = stage_plan(PipelineKind::Hq, r, {2, 3}, one);
  CHECK(hq.stage1_sampler == Sampler::Res2s);
  CHECK(hq.stage2_sampler == Sampler::Res2s);
  CHECK(hq.stage1_sigmas == ltx2_sigmas(15, 6144));  // shifted for stage 1's own tokens
  CHECK(hq.stage1_sigmas != two.stage1_sigmas);
  REQUIRE(hq.stage1_loras.size() == 1);
  REQUIRE(hq.stage2_loras.size() == 1);
  CHECK(hq.stage1_loras[0].strength == 0.25f);
  CHECK(hq.stage2_loras[0].strength == 0.5f);
  CHECK(hq.audio_from_stage1);
  CHECK_THROWS_WITH(stage_plan(PipelineKind::Hq, r, {2, 3}, {one[0], one[0]}),
                    Catch::Matchers::Contains("the HQ pipeline takes one distilled LoRA, got 2"));
}
