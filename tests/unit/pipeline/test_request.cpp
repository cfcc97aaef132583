// Request validation: each mistake is one message naming the flag.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"
#include "pipeline/request.h"
#include "pipeline/request_fields.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {
GenerationRequest good(const test::ScratchDir& dir) {
  GenerationRequest r;
  r.prompt = "a cat";
  r.height = 128;
  r.width = 192;
  r.num_frames = 9;
  r.video_guidance = default_video_guidance();
  r.audio_guidance = default_audio_guidance();
  r.output_path = dir.file("out.mp4");
  return r;
}
}  // namespace

TEST_CASE("request: a good request passes, each bad field is named") {
  test::ScratchDir dir("request");
  GenerationRequest r = good(dir);
  REQUIRE_NOTHROW(validate_request(r, PipelineKind::TwoStage));

  auto bad = [&](auto change, const char* message, PipelineKind k = PipelineKind::TwoStage) {
    GenerationRequest b = good(dir);
    change(b);
    REQUIRE_THROWS_WITH(validate_request(b, k), Contains(message));
  };
  bad([](auto& b) { b.num_frames = 10; }, "--num-frames must be 8k+1");
  bad([](auto& b) { b.num_frames = -7; }, "--num-frames must be 8k+1");
  // Unset (kNumFramesFromDurationHead): the duration head predicts it; a model without one needs it,
  // as the reference's require_num_frames_source says (checked last, after every other field).
  bad([](auto& b) { b.num_frames = kNumFramesFromDurationHead; },
      "--num-frames is required: the model has no "
      "duration head");
  {
    GenerationRequest unset = good(dir);
    unset.num_frames = kNumFramesFromDurationHead;
    ModelFacts with_head;
    with_head.duration_head = true;
    REQUIRE_NOTHROW(validate_request(unset, PipelineKind::Distilled, with_head));
    // The longest video the head may ask for bounds the checks made before it runs (20 s at 24 fps).
    REQUIRE(max_num_frames(unset) == 473);
    unset.images = {{test::golden_dir("pipeline_ti2vid") + "/image.png", 500, 1.0, 0}};
    REQUIRE_THROWS_WITH(validate_request(unset, PipelineKind::Distilled, with_head),
                        Contains("frame 500 is outside the video's 473 frames"));
  }
  {
    // LTX-2.5's Gemma 4 encodes only: --enhance-prompt is refused before any model loads.
    GenerationRequest enhance = good(dir);
    enhance.enhance_prompt = true;
    ModelFacts gemma4;
    gemma4.gemma_enhances = false;
    REQUIRE_THROWS_WITH(validate_request(enhance, PipelineKind::Distilled, gemma4),
                        Contains("--enhance-prompt: the text encoder is LTX-2.5's Gemma 4"));
    REQUIRE_NOTHROW(validate_request(enhance, PipelineKind::Distilled, ModelFacts{}));
  }
  bad([](auto& b) { b.height = 96; }, "--height must be a positive multiple of 64");
  bad([](auto& b) { b.width = 100; }, "--width must be a positive multiple of 64", PipelineKind::Distilled);
  bad([](auto& b) { b.prompt = "  \n"; }, "--prompt is empty");
  bad([](auto& b) { b.frame_rate = 0; }, "--frame-rate");
  bad([](auto& b) { b.num_inference_steps = 0; }, "--num-inference-steps");
  bad([](auto& b) { b.video_guidance.cfg_scale = -1; }, "--video-cfg-guidance-scale");
  bad([](auto& b) { b.audio_guidance.modality_scale = NAN; }, "--v2a-guidance-scale must be");
  bad([](auto& b) { b.output_path = "x.avi"; }, "must end in .mp4");
  bad([](auto& b) { b.output_path = "/no/such/folder/x.mp4"; }, "does not exist");
  std::filesystem::create_directory(dir.file("folder.mp4"));
  std::filesystem::create_directory(dir.file("clip.wav"));
  bad([&](auto& b) { b.output_path = dir.file("folder.mp4"); }, "folder.mp4: is a folder");
  bad([&](auto& b) { b.output_path = dir.file("clip.y4m"); }, "its audio file");
  bad(
      [](auto& b) {
        b.images.push_back({"/no/such.png", 0, 1.0, -1});
      },
      "--image /no/such.png: no such file");
  test::write_bytes(dir.file("text.png"), "not really a png");
  bad(
      [&](auto& b) {
        b.images.push_back({dir.file("text.png"), 0, 1.0, -1});
      },
      "text.png: not a PNG, JPEG or WebP image");
  const std::string png = test::golden_dir("pipeline_ti2vid") + "/image.png";
  bad([&](auto& b) { b.images.push_back({png, 9, 1.0, -1}); }, "outside the video's 9 frames");
  bad([&](auto& b) { b.images.push_back({png, 0, 1.5, -1}); }, "strength must be in [0, 1]");
  // --enhance-prompt: with --image only when the Gemma has a vision tower; its system text a readable
  // file, and only with it.
  {
    GenerationRequest with_image = good(dir);
    with_image.enhance_prompt = true;
    with_image.images.push_back({png, 0, 1.0, -1});
    REQUIRE_NOTHROW(validate_request(with_image, PipelineKind::TwoStage, ModelFacts{}));
    ModelFacts text_only;
    text_only.gemma_no_vision = "/g has no Gemma 3 vision tower (its config has no vision_config)";
    REQUIRE_THROWS_WITH(
        validate_request(with_image, PipelineKind::TwoStage, text_only),
        "--enhance-prompt with --image: /g has no Gemma 3 vision tower (its config has no "
        "vision_config), which shows Gemma the image; use Gemma 3's full checkpoint or drop one "
        "of the flags");
    with_image.enhance_prompt = false;
    REQUIRE_NOTHROW(validate_request(with_image, PipelineKind::TwoStage, text_only));
  }
  bad([&](auto& b) { b.enhance_system_prompt = png; },
      "--enhance-system-prompt is only used with --enhance-prompt");
  bad(
      [&](auto& b) {
        b.enhance_prompt = true;
        b.enhance_system_prompt = "/no/such.txt";
      },
      "--enhance-system-prompt /no/such.txt: no such file");
  GenerationRequest enhanced = good(dir);
  enhanced.enhance_prompt = true;
  enhanced.enhance_system_prompt = png;
  REQUIRE_NOTHROW(validate_request(enhanced, PipelineKind::TwoStage));
  // With the model's facts, the STG blocks must be the model's.
  ModelFacts two_blocks;
  two_blocks.transformer_blocks = 2;
  GenerationRequest blocks = good(dir);
  blocks.video_guidance.stg_blocks = {1};
  blocks.audio_guidance.stg_blocks = {0};
  REQUIRE_NOTHROW(validate_request(blocks, PipelineKind::TwoStage, two_blocks));
  blocks.audio_guidance.stg_blocks = {2};
  REQUIRE_THROWS_WITH(validate_request(blocks, PipelineKind::TwoStage, two_blocks),
                      "--audio-stg-blocks: block 2 is not in the model, which has 2 blocks");
  REQUIRE_NOTHROW(validate_request(blocks, PipelineKind::TwoStage));  // facts unknown
}

TEST_CASE("request: the HQ pipeline's defaults are the reference's LTX_2_3_HQ_PARAMS") {
  const GenerationRequest hq = default_request(PipelineKind::Hq);
  REQUIRE(hq.num_inference_steps == 15);
  REQUIRE(hq.height == 1088);
  REQUIRE(hq.width == 1920);
  REQUIRE(hq.negative_prompt == default_negative_prompt());
  REQUIRE(hq.video_guidance.cfg_scale == 3.0);
  REQUIRE(hq.video_guidance.stg_scale == 0.0);
  REQUIRE(hq.video_guidance.rescale_scale == 0.45);
  REQUIRE(hq.audio_guidance.cfg_scale == 7.0);
  REQUIRE(hq.audio_guidance.rescale_scale == 1.0);
  REQUIRE(hq.video_guidance.stg_blocks.empty());
  REQUIRE(hq.audio_guidance.stg_blocks.empty());
  REQUIRE(hq.distilled_lora_strength_stage_1 == 0.25);
  REQUIRE(hq.distilled_lora_strength_stage_2 == 0.5);
  // The two-stage pipeline keeps the LTX-2.3 guidance.
  REQUIRE(default_request(PipelineKind::TwoStage).video_guidance.rescale_scale == 0.7);
}

TEST_CASE("request: each pipeline's size multiple, guidance checks and steps") {
  test::ScratchDir dir("request_kinds");
  GenerationRequest r = good(dir);
  r.height = 96;  // a multiple of 32, not of 64: only the one-stage pipeline has no half-size stage
  r.width = 160;
  REQUIRE_NOTHROW(validate_request(r, PipelineKind::OneStage));
  REQUIRE_THROWS_WITH(validate_request(r, PipelineKind::Keyframes),
                      "--height must be a positive multiple of 64 for the keyframe pipeline, got 96");
  r.height = 80;
  REQUIRE_THROWS_WITH(validate_request(r, PipelineKind::OneStage),
                      "--height must be a multiple of 32 of at least 64 for the one-stage pipeline, got 80");
  r.height = 96;
  r.width = 32;  // a 1-cell-wide latent, which the video decoder cannot pad
  REQUIRE_THROWS_WITH(validate_request(r, PipelineKind::OneStage),
                      "--width must be a multiple of 32 of at least 64 for the one-stage pipeline, got 32");
  // The guided pipelines check guidance and steps (1 step has no LTX2 schedule); the distilled one
  // runs a fixed schedule and ignores them.
  GenerationRequest steps = good(dir);
  steps.num_inference_steps = 1;
  for (PipelineKind k : {PipelineKind::TwoStage, PipelineKind::OneStage, PipelineKind::Keyframes})
    REQUIRE_THROWS_WITH(validate_request(steps, k),
                        "--num-inference-steps must be between 2 and 1000, got 1");
  REQUIRE_NOTHROW(validate_request(steps, PipelineKind::Distilled));
  steps.num_inference_steps = 2;
  REQUIRE_NOTHROW(validate_request(steps, PipelineKind::OneStage));
  // The HQ pipeline's LoRA strengths per stage must be numbers (any sign, as the reference's).
  GenerationRequest hq = good(dir);
  hq.distilled_lora_strength_stage_1 = -0.5;
  REQUIRE_NOTHROW(validate_request(hq, PipelineKind::Hq));
  hq.distilled_lora_strength_stage_2 = NAN;
  REQUIRE_THROWS_WITH(validate_request(hq, PipelineKind::Hq),
                      "--distilled-lora-strength-stage-2 must be a finite number, got nan");
  // The keyframe pipeline takes an image at any frame, frame 0 included, as at the others.
  GenerationRequest images = good(dir);
  const std::string png = test::golden_dir("pipeline_ti2vid") + "/image.png";
  images.images = {{png, 0, 1.0, 0}, {png, 8, 1.0, 0}};
  REQUIRE_NOTHROW(validate_request(images, PipelineKind::Keyframes));
}

TEST_CASE("request: output kinds: .mp4, .y4m, .wav, a PNG sequence, --no-audio, each mistake named") {
  test::ScratchDir dir("request_outputs");
  GenerationRequest r = good(dir);
  REQUIRE(output_has_video(r));
  REQUIRE(output_has_audio(r));
  for (const std::string out : {"a.y4m", "a.wav", "frames/%05d.png", "f/x_%d.png"}) {
    r.output_path = dir.file(out);
    REQUIRE_NOTHROW(validate_request(r, PipelineKind::Distilled));
  }
  r.output_path = dir.file("a.wav");
  REQUIRE_FALSE(output_has_video(r));
  r.output_path = dir.file("a.mp4");
  r.no_audio = true;
  REQUIRE_NOTHROW(validate_request(r, PipelineKind::Distilled));
  REQUIRE(output_has_video(r));
  REQUIRE_FALSE(output_has_audio(r));
  // A .y4m without audio writes no .wav, so a folder of that name is no obstacle.
  std::filesystem::create_directory(dir.file("quiet.wav"));
  r.output_path = dir.file("quiet.y4m");
  REQUIRE_NOTHROW(validate_request(r, PipelineKind::Distilled));

  auto bad = [&](const std::string& out, bool no_audio, const std::string& message) {
    GenerationRequest b = good(dir);
    b.output_path = out;
    b.no_audio = no_audio;
    REQUIRE_THROWS_WITH(validate_request(b, PipelineKind::Distilled), Contains(message));
  };
  bad(dir.file("a.wav"), true, "--no-audio: --output-path " + dir.file("a.wav") + " is the audio alone");
  // The scratch folder itself holds other files: it is no sequence's folder.
  bad(dir.file("%05d.png"), false,
      "--output-path " + dir.file("%05d.png") + ": folder " + dir.path() + " holds ");
  bad("%05d.png", false, "--output-path %05d.png: a PNG sequence needs a folder of its own");
  bad(dir.file("f/%5d.png"), false, "--output-path " + dir.file("f/%5d.png") + ": bad frame number");
  bad(dir.file("f/%05d.jpg"), false, "must end in .png");
  bad(dir.file("no/f/%05d.png"), false, "folder " + dir.file("no") + " does not exist");
  test::write_bytes(dir.file("taken"), "x");
  bad(dir.file("taken/%05d.png"), false,
      "--output-path " + dir.file("taken/%05d.png") + ": " + dir.file("taken") +
          " is there and is not a folder");
  std::filesystem::create_directory(dir.file("mine"));
  test::write_bytes(dir.file("mine/photo.png"), "x");
  bad(dir.file("mine/%05d.png"), false, "holds photo.png, which this pattern does not write");
}

TEST_CASE("request: model paths: monolith xor split, required pieces, files exist") {
  test::ScratchDir dir("paths");
  for (const char* f : {"ckpt.safetensors", "up.safetensors", "lora.safetensors", "t.safetensors"})
    test::write_bytes(dir.file(f), "x");
  ModelPaths p;
  p.checkpoint = dir.file("ckpt.safetensors");
  p.gemma_root = test::golden_dir("pipeline_distilled") + "/gemma";
  p.spatial_upsampler = dir.file("up.safetensors");
  REQUIRE_NOTHROW(validate_model_paths(p, PipelineKind::Distilled));
  REQUIRE_THROWS_WITH(validate_model_paths(p, PipelineKind::TwoStage),
                      Contains("--distilled-lora is required"));
  p.distilled_loras = {{dir.file("lora.safetensors"), 1.0}};
  REQUIRE_NOTHROW(validate_model_paths(p, PipelineKind::TwoStage));

  // The keyframe pipeline refines with the distilled LoRA as the two-stage one does; the one-stage
  // pipeline needs neither it nor the upsampler.
  REQUIRE_NOTHROW(validate_model_paths(p, PipelineKind::Keyframes));
  ModelPaths one_stage = p;
  one_stage.spatial_upsampler.clear();
  one_stage.distilled_loras = {};
  REQUIRE_NOTHROW(validate_model_paths(one_stage, PipelineKind::OneStage));
  REQUIRE_THROWS_WITH(validate_model_paths(one_stage, PipelineKind::Distilled),
                      Contains("--spatial-upsampler-path is empty"));
  REQUIRE_THROWS_WITH(validate_model_paths(one_stage, PipelineKind::Keyframes),
                      Contains("--spatial-upsampler-path is empty"));
  one_stage.spatial_upsampler = p.spatial_upsampler;
  REQUIRE_THROWS_WITH(validate_model_paths(one_stage, PipelineKind::Keyframes),
                      "--distilled-lora is required for the keyframe pipeline");

  ModelPaths mixed = p;
  mixed.transformer = dir.file("t.safetensors");
  REQUIRE_THROWS_WITH(validate_model_paths(mixed, PipelineKind::TwoStage), Contains("cannot be mixed"));
  ModelPaths none = p;
  none.checkpoint.clear();
  REQUIRE_THROWS_WITH(validate_model_paths(none, PipelineKind::Distilled),
                      Contains("give --distilled-checkpoint-path"));
  ModelPaths split = none;
  split.transformer = dir.file("t.safetensors");
  REQUIRE_THROWS_WITH(validate_model_paths(split, PipelineKind::Distilled),
                      Contains("--text-encoder-path is empty"));
  ModelPaths missing = p;
  missing.spatial_upsampler = dir.file("absent.safetensors");
  REQUIRE_THROWS_WITH(validate_model_paths(missing, PipelineKind::TwoStage),
                      Contains("--spatial-upsampler-path") && Contains("no such file"));
}

TEST_CASE("request: model paths: Gemma from --gemma-root or from a text-encoder file holding it") {
  namespace fs = std::filesystem;
  test::ScratchDir dir("paths_gemma");
  for (const char* f : {"ckpt.safetensors", "t.safetensors"}) test::write_bytes(dir.file(f), "x");
  const std::string golden_gemma = test::golden_dir("pipeline_distilled") + "/gemma";
  ModelPaths mono;
  mono.checkpoint = dir.file("ckpt.safetensors");
  auto refused = [](ModelPaths paths, const std::string& root, const std::string& message) {
    paths.gemma_root = root;
    REQUIRE_THROWS_WITH(validate_model_paths(paths, PipelineKind::OneStage), message);
  };
  // A Gemma folder needs its config, weights and a tokenizer (tokenizer.model or tokenizer.json).
  fs::create_directories(dir.file("gemma"));
  refused(mono, dir.file("gemma"), "--gemma-root " + dir.file("gemma") + ": Gemma folder has no config.json");
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(golden_gemma + "/" + f, dir.file("gemma/") + f);
  refused(
      mono, dir.file("gemma"),
      "--gemma-root " + dir.file("gemma") + ": Gemma folder has neither tokenizer.model nor tokenizer.json");
  fs::copy_file(golden_gemma + "/tokenizer.json", dir.file("gemma/tokenizer.json"));
  mono.gemma_root = dir.file("gemma");
  REQUIRE_NOTHROW(validate_model_paths(mono, PipelineKind::OneStage));
  refused(mono, dir.file("none"),
          "--gemma-root " + dir.file("none") + ": no such Gemma folder or text-encoder file");
  mono.gemma_root.clear();
  REQUIRE_THROWS_WITH(validate_model_paths(mono, PipelineKind::OneStage),
                      "--gemma-root is required (the Gemma 3 text encoder)");

  // The split layout: the reference's packed text-encoder file stands in for --gemma-root.
  ModelPaths split;
  split.transformer = split.video_vae = split.audio_vae = dir.file("t.safetensors");
  split.text_encoder = test::golden_dir("text_encoder_file") + "/text_encoder.safetensors";
  REQUIRE(split.gemma_source() == split.text_encoder);
  REQUIRE_NOTHROW(validate_model_paths(split, PipelineKind::OneStage));
  refused(split, golden_gemma,
          "--gemma-root " + golden_gemma + " and --text-encoder-path " + split.text_encoder +
              " both hold Gemma: give one");
  // A text-encoder file with the projection only needs --gemma-root.
  const Tensor w = Tensor::zeros({4, 4});
  write_safetensors(dir.file("projection.safetensors"),
                    {{"text_embedding_projection.aggregate_embed.weight", w}});
  split.text_encoder = dir.file("projection.safetensors");
  REQUIRE_THROWS_WITH(validate_model_paths(split, PipelineKind::OneStage),
                      "--gemma-root is required (the Gemma 3 text encoder): the --text-encoder-path file " +
                          split.text_encoder + " holds no Gemma");
  split.gemma_root = golden_gemma;
  REQUIRE_NOTHROW(validate_model_paths(split, PipelineKind::OneStage));
  split.gemma_root.clear();
  // A file with Gemma's tensors but no config, or no tokenizer, is refused naming what it lacks.
  const std::string config = test::read_bytes(golden_gemma + "/config.json");
  fs::create_directories(dir.file("packed"));
  split.text_encoder = dir.file("packed/te.safetensors");
  write_safetensors(split.text_encoder, {{"language_model.model.norm.weight", w}});
  REQUIRE_THROWS_WITH(
      validate_model_paths(split, PipelineKind::OneStage),
      "--text-encoder-path " + split.text_encoder +
          ": carries no Gemma config (metadata 'gemma_config') and has no config.json beside it");
  write_safetensors(split.text_encoder, {{"language_model.model.norm.weight", w}},
                    {{"gemma_config", config}});
  REQUIRE_THROWS_WITH(validate_model_paths(split, PipelineKind::OneStage),
                      "--text-encoder-path " + split.text_encoder +
                          ": holds no tokenizer (tensor 'tokenizer_json' or 'spiece_model')");
}

TEST_CASE("request: JSON round trip, malformed JSON refused") {
  test::ScratchDir dir("request_json");
  GenerationRequest r = good(dir);
  r.images.push_back({"a.png", 8, 0.5, 0});
  r.no_audio = true;
  GenerationRequest back = request_from_json(to_json(r));
  REQUIRE(to_json(back) == to_json(r));
  REQUIRE(back.no_audio);
  REQUIRE_THROWS_WITH(request_from_json({{"prompt", 3}}), Contains("malformed generation request"));
  ModelPaths p;
  p.checkpoint = "c";
  p.loras.push_back({"l", 0.5});
  REQUIRE(to_json(model_paths_from_json(to_json(p))) == to_json(p));
}
