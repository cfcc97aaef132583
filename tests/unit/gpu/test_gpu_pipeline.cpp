// The distilled pipeline with PipelineOptions::device = cuda:0 on the golden pipeline_distilled
// checkpoint (128x192, 9 frames, no image), and the one-stage, keyframe and HQ pipelines on
// pipeline_ti2vid's model set with two images (the guided stages, keyframe tokens, the res_2s
// loop): the
// transformer runs on the GPU (float32, the options' default), the video VAE decoder, the
// upsampler, the audio decoder and the vocoder there in bf16; the upsampled latent, the float
// frames (the "video" probe) and the waveform come back to the host in float32, the frames for
// files as 8-bit RGB made on the GPU. Judged by the bf16 rule (gpu_compare.h) against
// the CPU float32 run, with the CPU run whose VAE side is placed as bf16 (vae_dtype: every op
// rounds its result) as the naive bf16 computation.
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/similarity.h"
#include "gpu_compare.h"
#include "io/configs/diffusion_video_decoder_config.h"
#include "models/video_vae/diffusion_tiling.h"
#include "ops/rgb8.h"
#include "ops/shape.h"
#include "pipeline/pipeline.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

struct Outputs {
  Tensor upsampled, frames, waveform;  // frames: the "video" probes
  Tensor rgb8;                         // video_chunk's frames
};

template <typename Pipeline>
Outputs run(const ModelPaths& paths, const GenerationRequest& r, Device device,
            std::optional<DType> vae_dtype, DType transformer_dtype = DType::F32,
            Quantization quantization = Quantization::None,
            std::optional<video_vae::TileSizeConfig> diffusion_decode_tiles = std::nullopt) {
  pipeline::PipelineOptions options;
  options.device = device;
  options.diffusion_decode_tiles = diffusion_decode_tiles;
  options.vae_dtype = vae_dtype;
  options.transformer_dtype = transformer_dtype;
  options.quantization = quantization;
  Pipeline pipe(paths, options);
  Outputs out;
  std::vector<Tensor> chunks, probed;
  pipeline::PipelineCallbacks cb;
  cb.video_chunk = [&](const Tensor& frames) { chunks.push_back(frames); };
  cb.audio = [&](const Tensor& waveform, int64_t) { out.waveform = waveform; };
  cb.probe = [&](const std::string& name, const Tensor& t) {
    if (name == "upsampled_video_latent") out.upsampled = t.clone();
    if (name == "video") probed.push_back(t.clone());
  };
  pipe.run(r, cb);
  out.frames = ops::cat(probed, 0);
  out.rgb8 = ops::cat(chunks, 0);
  return out;
}

GenerationRequest request(const test::ScratchDir& dir) {
  GenerationRequest r;
  r.prompt = "a fox";
  r.height = 128;
  r.width = 192;
  r.num_frames = 9;
  r.output_path = dir.file("out.mp4");
  return r;
}

Outputs run_distilled(Device device, std::optional<DType> vae_dtype, DType transformer_dtype = DType::F32,
                      Quantization quantization = Quantization::None) {
  test::ScratchDir dir("gpu_pipeline");
  return run<pipeline::DistilledPipeline>(test::fixture_model_paths(test::golden_dir("pipeline_distilled")),
                                          request(dir), device, vae_dtype, transformer_dtype, quantization);
}

// 10 log10(1 / mean squared difference) of two frame tensors in [0, 1].
double psnr(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  double se = 0;
  for (size_t i = 0; i < x.size(); ++i) se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return 10 * std::log10(double(x.size()) / se);
}

// A guided request on pipeline_ti2vid's models: 2 steps, STG on the tiny model's blocks, an image at
// frame 0 and one at frame 8 (which pipeline makes which a keyframe is the pipeline's business).
template <typename Pipeline>
Outputs run_guided(Device device, std::optional<DType> vae_dtype) {
  test::ScratchDir dir("gpu_pipeline_guided");
  const std::string models = test::golden_dir("pipeline_ti2vid"),
                    images = test::golden_dir("pipeline_keyframes");
  ModelPaths paths = test::fixture_model_paths(models);
  paths.distilled_loras = {{models + "/distilled_lora.safetensors", 1.0}};
  GenerationRequest r = request(dir);
  r.negative_prompt = default_negative_prompt();
  r.video_guidance = default_video_guidance();
  r.audio_guidance = default_audio_guidance();
  r.video_guidance.stg_blocks = {1};
  r.audio_guidance.stg_blocks = {0};
  r.num_inference_steps = 2;
  r.images = {{images + "/image.png", 0, 1.0, 0}, {images + "/image_last.png", 8, 1.0, 0}};
  return run<Pipeline>(paths, r, device, vae_dtype);
}

void require_host_f32(const Tensor& t) {
  REQUIRE(t.defined());
  REQUIRE(t.device().is_cpu());
  REQUIRE(t.dtype() == DType::F32);
}

}  // namespace

TEST_CASE("gpu: the distilled pipeline runs the VAE side on its GPU in bf16 (2x rule against the CPU)") {
  const Outputs ref = run_distilled(Device::cpu(), std::nullopt);
  const Outputs naive = run_distilled(Device::cpu(), DType::BF16);
  const Outputs gpu = run_distilled(test::gpu(), std::nullopt);
  for (const Tensor* t : {&gpu.upsampled, &gpu.frames, &gpu.waveform}) require_host_f32(*t);
  test::check_bf16_rule("upsampled latent", gpu.upsampled, naive.upsampled, ref.upsampled);
  test::check_bf16_rule("frames", gpu.frames, naive.frames, ref.frames);
  test::check_bf16_rule("waveform", gpu.waveform, naive.waveform, ref.waveform);
  // The 8-bit frames the GPU made are its float frames scaled and truncated, value for value.
  REQUIRE(gpu.rgb8.device().is_cpu());
  REQUIRE(gpu.rgb8.dtype() == DType::U8);
  REQUIRE(gpu.rgb8.shape() == gpu.frames.shape());
  const std::vector<float> unit = gpu.frames.to_vector(), bytes = gpu.rgb8.to_vector();
  size_t mismatches = 0;
  for (size_t i = 0; i < unit.size(); ++i) mismatches += bytes[i] != ops::unit_to_u8(unit[i]);
  REQUIRE(mismatches == 0);
}

// --quantization fp8 end to end on the GPU (the transformer in bf16 with its block linears as
// per-row scaled FP8 GEMMs, both stages) against the same bf16 run without it: the frames' PSNR
// (printed; an FP8 path that computed garbage would sit near 10 dB) and the waveform's error.
TEST_CASE("gpu: the distilled pipeline under fp8 stays near its bf16 frames (PSNR)") {
  const Outputs bf16 = run_distilled(test::gpu(), std::nullopt, DType::BF16, Quantization::None);
  const Outputs fp8 = run_distilled(test::gpu(), std::nullopt, DType::BF16, Quantization::Fp8);
  const double frames_db = psnr(fp8.frames, bf16.frames);
  const Similarity audio = similarity(fp8.waveform, bf16.waveform);
  std::printf("distilled pipeline fp8 vs bf16 on the GPU: frames PSNR %.2f dB, waveform rel_l2 %.4f\n",
              frames_db, audio.rel_l2);
  REQUIRE(std::isfinite(frames_db));  // fp8 ran: the frames differ
  REQUIRE(frames_db > 30);
  REQUIRE(audio.rel_l2 < 0.2);
}

namespace {

template <typename Pipeline>
void check_guided_pipeline(bool has_upsampler) {
  const Outputs ref = run_guided<Pipeline>(Device::cpu(), std::nullopt);
  const Outputs naive = run_guided<Pipeline>(Device::cpu(), DType::BF16);
  const Outputs gpu = run_guided<Pipeline>(test::gpu(), std::nullopt);
  for (const Tensor* t : {&gpu.frames, &gpu.waveform}) require_host_f32(*t);
  REQUIRE(gpu.upsampled.defined() == has_upsampler);
  if (has_upsampler) test::check_bf16_rule("upsampled latent", gpu.upsampled, naive.upsampled, ref.upsampled);
  test::check_bf16_rule("frames", gpu.frames, naive.frames, ref.frames);
  test::check_bf16_rule("waveform", gpu.waveform, naive.waveform, ref.waveform);
}

}  // namespace

TEST_CASE("gpu: the one-stage pipeline on the GPU, VAE side in bf16 (2x rule against the CPU)") {
  check_guided_pipeline<pipeline::OneStagePipeline>(false);
}

TEST_CASE("gpu: the keyframe pipeline on the GPU, VAE side in bf16 (2x rule against the CPU)") {
  check_guided_pipeline<pipeline::KeyframePipeline>(true);
}

TEST_CASE("gpu: the HQ pipeline (res_2s) on the GPU, VAE side in bf16 (2x rule against the CPU)") {
  check_guided_pipeline<pipeline::HqPipeline>(true);
}

namespace {

// A two-stage pipeline at 64 x 128, 9 frames with the diffusion decoder on the GPU against its CPU
// float32 run and its CPU run with the VAE side in bf16 (the naive computation): the upsampled
// latent, frames and waveform. The GPU decode takes the tiles its free memory allows (any GPU has
// room for the largest here: 2 temporal tiles over the size-floored 17 frames); the CPU runs are
// given the same tiles, as they would otherwise decode whole.
template <typename Pipeline>
void check_two_stages_on_gpu(const ModelPaths& paths, const GenerationRequest& r) {
  const auto tiles = video_vae::recommend_diffusion_tiling(
      DiffusionVideoDecoderConfig::from_metadata(WeightSet::open({paths.video_vae})->config()), r.height,
      r.width, r.num_frames, uint64_t{1} << 40, 0);
  const Outputs ref =
      run<Pipeline>(paths, r, Device::cpu(), std::nullopt, DType::F32, Quantization::None, tiles);
  const Outputs naive =
      run<Pipeline>(paths, r, Device::cpu(), DType::BF16, DType::F32, Quantization::None, tiles);
  const Outputs gpu = run<Pipeline>(paths, r, test::gpu(), std::nullopt);
  for (const Tensor* t : {&gpu.upsampled, &gpu.frames, &gpu.waveform}) require_host_f32(*t);
  REQUIRE(gpu.frames.shape() == Shape{9, 64, 128, 3});
  test::check_bf16_rule("upsampled latent", gpu.upsampled, naive.upsampled, ref.upsampled);
  test::check_bf16_rule("frames", gpu.frames, naive.frames, ref.frames);
  test::check_bf16_rule("waveform", gpu.waveform, naive.waveform, ref.waveform);
}

}  // namespace

// LTX-2.5's diffusion video decoder (pipeline_distilled_25_dvae: vae._class_name CausalDiffusionVAE)
// as the distilled pipeline runs it: its neighbourhood attention (ops::attention on masked query
// tiles), AdaLN diffusion blocks and sampling loop on the GPU in bf16, against the CPU's float32 run
// and its naive bf16 run.
TEST_CASE("gpu: the distilled pipeline with LTX-2.5's diffusion video decoder, bf16 on the GPU (2x rule)") {
  test::ScratchDir dir("gpu_pipeline_dvae");
  ModelPaths paths = test::diffusion_decoder_set_paths();
  GenerationRequest r = request(dir);
  r.height = 64;
  r.width = 128;
  check_two_stages_on_gpu<pipeline::DistilledPipeline>(paths, r);
}

// The two-stage pipeline (ltx2-ti2vid) on the same tiny LTX-2.5 set: the guided stage 1 (negative
// prompt, CFG, STG, modality guidance; an image at frame 0), the distilled LoRA in stage 2
// (pipeline_ti2vid's, whose targets the 2.5 transformer has), the diffusion decoder; GPU against the
// CPU as above.
TEST_CASE(
    "gpu: the two-stage pipeline on LTX-2.5's set with its diffusion decoder, bf16 on the GPU (2x rule)") {
  test::ScratchDir dir("gpu_pipeline_ti2vid_25");
  ModelPaths paths = test::diffusion_decoder_set_paths();
  paths.distilled_loras = {{test::golden_dir("pipeline_ti2vid") + "/distilled_lora.safetensors", 1.0}};
  GenerationRequest r = request(dir);
  r.height = 64;
  r.width = 128;
  r.negative_prompt = default_negative_prompt();
  r.video_guidance = default_video_guidance();
  r.audio_guidance = default_audio_guidance();
  r.video_guidance.stg_blocks = {1};
  r.audio_guidance.stg_blocks = {0};
  r.num_inference_steps = 2;
  r.images = {{test::golden_dir("pipeline_ti2vid") + "/image.png", 0, 1.0, 0}};
  check_two_stages_on_gpu<pipeline::TwoStagePipeline>(paths, r);
}
