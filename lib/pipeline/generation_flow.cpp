// The flow shared by every pipeline (see generation_flow.h).
#include "pipeline/generation_flow.h"

#include <fstream>
#include <iterator>

#include "core/cuda/events.h"
#include "core/error.h"
#include "core/log.h"
#include "media/image_reader.h"
#include "models/video_vae/diffusion_tiling.h"
#include "models/video_vae/tiled_decode.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/rgb8.h"
#include "pipeline/denoise_stage.h"
#include "pipeline/image_conditioning.h"
#include "pipeline/latent_tools.h"
#include "pipeline/residency.h"
#include "pipeline/schedulers.h"

namespace ltx2::pipeline {

namespace {

namespace tr = models::transformer;

// --enhance-prompt's settings: the system text from --enhance-system-prompt's file, or ltx2's own, and
// the image to show Gemma with --image.
std::optional<EnhanceSettings> enhance_settings(const GenerationRequest& r) {
  if (!r.enhance_prompt) return std::nullopt;
  EnhanceSettings s;
  if (!r.enhance_system_prompt.empty()) {
    std::ifstream in(r.enhance_system_prompt, std::ios::binary);
    LTX2_CHECK(in, "--enhance-system-prompt {}: cannot read it", r.enhance_system_prompt);
    s.system_prompt.assign(std::istreambuf_iterator<char>(in), {});
  }
  // The reference shows Gemma the first image given (images[0]), whatever its frame, as decoded
  // (no re-compression).
  if (!r.images.empty()) s.image = media::read_image(r.images[0].path);
  return s;
}

// A model output as the host-side float32 the latents, probes and writers use (no copy on the CPU).
Tensor to_host_f32(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::F32);
}

// Throws naming `what` when t holds a NaN or an infinity: a diverged stage fails its job instead of
// decoding into a garbage video. x * 0 is 0 for every finite x and NaN otherwise, so one sum tells
// (on the tensor's device; one value comes back).
void require_finite(const Tensor& t, const std::string& what) {
  const float s = ops::sum(ops::mul(t.reshape({t.numel()}), 0.0f), 0).to(Device::cpu()).to(DType::F32).item();
  LTX2_CHECK(s == 0.0f, "{} holds NaN or infinite values", what);
}

MultiModalGuiderParams guider_params(const GuidanceParams& g) {
  MultiModalGuiderParams p;
  p.cfg_scale = static_cast<float>(g.cfg_scale);
  p.stg_scale = static_cast<float>(g.stg_scale);
  p.stg_blocks = g.stg_blocks;
  p.rescale_scale = static_cast<float>(g.rescale_scale);
  p.modality_scale = static_cast<float>(g.modality_scale);
  p.skip_step = g.skip_step;
  return p;
}

// Puts the transformer back to base + user LoRAs however the stage ends.
class StageLoras {
 public:
  StageLoras(PipelineModels& m, const std::vector<LoraWithStrength>& extra) : m_(m), active_(!extra.empty()) {
    if (active_) m.transformer_weights->push_stage(extra);
  }
  ~StageLoras() {
    if (active_) m_.transformer_weights->pop_stage();
  }
  StageLoras(const StageLoras&) = delete;
  StageLoras& operator=(const StageLoras&) = delete;

 private:
  PipelineModels& m_;
  bool active_;
};

struct StageResult {
  Tensor video_latent, audio_latent;  // unpatchified [1, C, F, H, W] / [1, z, T, M]
};

struct StageSetup {
  std::string name;
  int64_t height, width;
  bool images_as_keyframes;
  Tensor video_initial, audio_initial;  // undefined: zeros
  float noise_scale;
  NoiseDraw video_draw, audio_draw;
  DenoiseStage denoise;
};

StageResult run_stage(PipelineModels& m, const GenerationRequest& r, StageSetup s, LatentNoiseSource& noise,
                      const PipelineCallbacks& cb) {
  const auto grid = video_latent_grid(r.num_frames, s.height, s.width);
  const TransformerConfig& tc = m.transformer_config;
  const int64_t z = m.audio_config.z_channels;
  LTX2_CHECK(tc.audio_in_channels % z == 0,
             "transformer audio_in_channels {} is not a multiple of the audio VAE's {} latent channels",
             tc.audio_in_channels, z);
  const Shape video_shape = {1, tc.video_in_channels, grid[0], grid[1], grid[2]};
  const Shape audio_shape = {1, z, audio_latent_frames(r.num_frames, r.frame_rate), tc.audio_in_channels / z};

  // The states are formed and noised on the host (the noise is drawn there), then the loop moves
  // them to the transformer's device for the whole stage.
  const Tensor video_initial = s.video_initial.defined() ? to_host_f32(s.video_initial) : Tensor();
  const Tensor audio_initial = s.audio_initial.defined() ? to_host_f32(s.audio_initial) : Tensor();
  LatentState video = create_video_state(video_shape, r.frame_rate, video_initial);
  for (size_t i = 0; i < r.images.size(); ++i) {
    const ImageCondition& image = r.images[i];
    const Tensor pixels = load_conditioning_image(image, s.height, s.width, m.model_version);
    const VideoConditioning item =
        image_conditioning_item(*m.video_encoder, pixels, image, s.images_as_keyframes);
    const std::string prefix = "image_conditioning." + s.name + ".item" + std::to_string(i) + ".";
    probe(cb, prefix + "pixels", pixels);
    if (cb.probe)
      std::visit(
          [&](const auto& c) {
            if constexpr (requires { c.latent; })
              probe(cb, prefix + "latent", c.latent);
            else
              probe(cb, prefix + "latent", c.keyframes);
          },
          item);
    apply_conditioning(video, item, grid, r.frame_rate);
  }
  LatentState audio = create_audio_state(audio_shape, audio_initial);
  apply_noise(video, noise.draw(s.video_draw, video.latent.shape()), s.noise_scale);
  apply_noise(audio, noise.draw(s.audio_draw, audio.latent.shape()), s.noise_scale);
  for (const auto& [mod, st] :
       {std::pair<const char*, const LatentState*>{"video", &video}, {"audio", &audio}}) {
    const std::string prefix = s.name + "." + mod + ".";
    probe(cb, prefix + "initial_latent", st->latent);
    probe(cb, prefix + "clean_latent", st->clean_latent);
    probe(cb, prefix + "denoise_mask", st->denoise_mask);
    probe(cb, prefix + "positions", st->positions);
  }
  probe(cb, "sigmas." + s.name, sigmas_tensor(s.denoise.sigmas));
  if (cb.probe)
    for (const auto& [name, t] : m.transformer_weights->by_name())
      probe(cb, s.name + ".transformer_weight." + name, t);

  const tr::Transformer transformer = m.transformer();
  s.denoise.name = s.name;
  s.denoise.transformer = &transformer;
  s.denoise.device = m.options.device;

  run_denoise_stage(s.denoise, video, audio, cb);
  clear_conditioning(video);
  require_finite(video.latent, s.name + "'s video latent");
  require_finite(audio.latent, s.name + "'s audio latent");
  StageResult out{unpatchify_video(video.latent, grid),
                  unpatchify_audio(audio.latent, audio_shape[1], audio_shape[3])};
  probe(cb, s.name + ".video_latent", out.video_latent);
  probe(cb, s.name + ".audio_latent", out.audio_latent);
  return out;
}

// Finished frames leave the decoder's device as 8-bit RGB (a quarter of float32's bytes); the float
// frames only for parity probes.
void hand_over_frames(const PipelineCallbacks& cb, const Tensor& chunk) {
  if (cb.probe) cb.probe("video", to_frames(to_host_f32(chunk)));
  if (cb.video_chunk) cb.video_chunk(ops::decoded_to_rgb8(chunk.select(0, 0)).to(Device::cpu()));
}

// LTX-2.5's diffusion decoder. Its noise is the pipeline generator's next draws after stage 2's, as
// the reference's pipelines hand their generator to decode_video (the conv decoder's slot:
// NoiseDraw::Decoder), of the shapes the reference draws (noise_shapes). On a GPU the decode is
// tiled as the reference's pipelines tile it (AUTO_TILING): the tiles the free device memory allows
// (recommend_diffusion_tiling; in a fleet the least free memory over the ranks), the decoder's
// weights already counted in it. On the CPU the decode is whole, as the reference's
// tiling_config=None decodes it (its recommendation finds no tile there and refuses). Tiles set in
// the options are taken as they are (PipelineOptions::diffusion_decode_tiles).
void decode_video_diffusion(const PipelineModels& m, const Tensor& latent, LatentNoiseSource& noise,
                            const PipelineCallbacks& cb) {
  const video_vae::DiffusionVideoDecoder& decoder = *m.diffusion_decoder;
  VideoDecodeExecutor* executor = m.options.executors.video_decode.get();
  video_vae::TileSizeConfig tiles = m.options.diffusion_decode_tiles.value_or(video_vae::TileSizeConfig{});
  if (!m.options.diffusion_decode_tiles && decoder.device().is_cuda()) {
    uint64_t free_bytes = device_bytes_available(decoder.device());
    if (executor) free_bytes = executor->tiling_budget(free_bytes);
    const std::array<tiling::Range, 3> video = decoder.content_box(latent.shape());
    tiles = video_vae::recommend_diffusion_tiling(decoder.config(), video[1].length(), video[2].length(),
                                                  video[0].length(), free_bytes, 0);
  }
  const tiling::TilePlan plan = decoder.tile_plan(latent.shape(), tiles);
  if (plan.tiles.size() > 1)
    log_info(
        "video decode: the diffusion decoder in {} tiles (frames {}/{}, height {}/{}, width {}/{} px, "
        "tile/overlap)",
        plan.tiles.size(), tiles.frames.value, tiles.frames.overlap, tiles.height.value, tiles.height.overlap,
        tiles.width.value, tiles.width.overlap);
  std::vector<Tensor> draws;
  for (const Shape& shape : decoder.noise_shapes(latent.shape(), plan))
    draws.push_back(noise.draw(NoiseDraw::Decoder, shape));
  const auto on_chunk = [&](const Tensor& chunk) { hand_over_frames(cb, chunk); };
  if (executor)
    executor->decode_diffusion(decoder, latent, draws, plan, on_chunk);
  else
    decoder.decode(latent, draws, plan, on_chunk);
}

void decode_video(const PipelineModels& m, Tensor latent, LatentNoiseSource& noise,
                  const PipelineCallbacks& cb) {
  if (m.video_decoder_kind == video_vae::VideoDecoderKind::Diffusion)
    return decode_video_diffusion(m, latent, noise, cb);
  const video_vae::VideoDecoder& decoder = *m.video_decoder;
  // On the decoder's device (where stage 2 left it, or one upload); every tile is sliced from it.
  latent = latent.to(decoder.device());
  Tensor timestep;
  if (decoder.config().timestep_conditioning) {
    latent = video_vae::mix_decode_noise(latent,
                                         noise.draw(NoiseDraw::Decoder, latent.shape()).to(decoder.device()));
    timestep = Tensor::scalar(video_vae::kDefaultDecodeTimestep).to(decoder.device());
  }
  const auto factors = decoder.config().scale_factors();
  const int64_t height = latent.size(3) * factors.height, width = latent.size(4) * factors.width;
  const video_vae::TileSizeConfig tiling = video_vae::TileSizeConfig::automatic(height, width, factors);
  const video_vae::DecodeTilePlan plan = video_vae::plan_tiled_decode(decoder, latent.shape(), tiling);
  const auto on_chunk = [&](const Tensor& chunk) { hand_over_frames(cb, chunk); };
  if (m.options.executors.video_decode)
    m.options.executors.video_decode->decode(decoder, latent, timestep, plan, on_chunk);
  else
    video_vae::tiled_decode(decoder, latent, plan, on_chunk, timestep);
}

// Ends a one-step phase: the GPU's work is waited for first, so the phase clock reads what the
// phase took, not how long queuing it took.
void end_phase(const PipelineModels& m, const PipelineCallbacks& cb, const char* phase) {
  if (m.options.device.is_cuda()) cuda_synchronize(m.options.device.index);
  if (cb.progress) cb.progress(phase, 0, 1);
}

void decode_audio(const PipelineModels& m, const Tensor& latent, const PipelineCallbacks& cb) {
  const Tensor mel = m.audio_decoder->forward(latent);
  probe(cb, "audio.mel", mel);
  const Tensor wave = to_host_f32(m.vocoder->forward(mel));
  require_finite(wave, "the vocoder's waveform");
  if (cb.audio) cb.audio(wave.select(0, 0).contiguous(), m.vocoder->output_sampling_rate());
}

// Upsamples stage 1's video latent and refines it at full size: stage 2, re-noised at its first
// sigma, with the plan's stage-2 LoRAs fused for the stage only.
StageResult refine(PipelineModels& m, const GenerationRequest& r, const StagePlan& plan,
                   const StageResult& stage1, const StageContexts& positive, LatentNoiseSource& noise,
                   const PipelineCallbacks& cb) {
  m.acquire(ModelPart::Upsampler);
  const Tensor upsampled = to_host_f32(
      upsampler::upsample_video(*m.upsampler, stage1.video_latent, m.video_encoder->statistics()));
  m.release(ModelPart::Upsampler);
  probe(cb, "upsampled_video_latent", upsampled);
  end_phase(m, cb, "upsample");

  const StageExecutors& ex = m.options.executors;
  const std::vector<float>& sigmas2 = ex.stage2_sigmas.empty() ? stage2_distilled_sigmas() : ex.stage2_sigmas;
  StageSetup s2{"stage2",
                r.height,
                r.width,
                plan.images_as_keyframes,
                upsampled,
                stage1.audio_latent,
                sigmas2.front(),
                NoiseDraw::Stage2Video,
                NoiseDraw::Stage2Audio,
                {}};
  s2.denoise.sigmas = sigmas2;
  s2.denoise.executor = ex.stage2.get();
  s2.denoise.positive = positive;
  s2.denoise.sampler = plan.stage2_sampler;
  s2.denoise.step_noise = &noise;
  s2.denoise.stage_index = 1;
  const StageLoras loras(m, plan.stage2_loras);
  return run_stage(m, r, std::move(s2), noise, cb);
}

}  // namespace

Tensor to_frames(const Tensor& decoded) {
  Tensor x = ops::mul(ops::add(decoded.select(0, 0), 1.0f), 0.5f);
  x = ops::minimum(ops::maximum(x, Tensor::scalar(0.0f)), Tensor::scalar(1.0f));
  return x.permute({1, 2, 3, 0}).contiguous();
}

void run_generation_flow(PipelineModels& m, const GenerationRequest& request, const StagePlanFor& plan_for,
                         LatentNoiseSource& noise, const PipelineCallbacks& cb) {
  // The request with its frame count resolved (below, after the prompt is encoded); until then the
  // plan is made for the longest video it may have (whether stage 1 is guided does not depend on it).
  GenerationRequest r = request;
  r.num_frames = max_num_frames(request);
  StagePlan plan = plan_for(r);
  for (const ImageCondition& image : r.images) check_image_crf(image, m.model_version);
  std::vector<std::string> prompts = {r.prompt};
  if (plan.guided_stage1) prompts.push_back(r.negative_prompt);
  const std::optional<EnhanceSettings> enhance = enhance_settings(r);
  std::vector<EncodedPrompt> encoded;
  if (m.options.executors.text_encode) {
    encoded = m.options.executors.text_encode->encode(m, prompts, enhance);
  } else {
    m.acquire(ModelPart::Text);
    encoded = m.text->encode(prompts, enhance);
    m.release(ModelPart::Text);
  }
  for (size_t i = 0; i < encoded.size(); ++i) {
    const std::string prefix = i == 0 ? "text.prompt." : "text.negative_prompt.";
    const EncodedPrompt& e = encoded[i];
    const auto n = static_cast<int64_t>(e.tokens.ids.size());
    probe(cb, prefix + "input_ids", Tensor::from_vector_i64(e.tokens.ids, {n}));
    probe(cb, prefix + "attention_mask", Tensor::from_vector_i64(e.tokens.mask, {n}));
    probe(cb, prefix + "video_context", e.video_context);
    probe(cb, prefix + "audio_context", e.audio_context);
    probe(cb, prefix + "context_mask", e.context_mask);
  }
  const StageContexts positive{encoded[0].video_context, encoded[0].audio_context};
  // --num-frames unset: the duration head predicts it from the prompt's contexts (the reference's
  // resolve_num_frames, after prompt encoding).
  if (request.num_frames == kNumFramesFromDurationHead) {
    const auto probe_seconds = [&](const Tensor& seconds) { probe(cb, "duration.seconds", seconds); };
    DurationExecutor* duration = m.options.executors.duration.get();
    r.num_frames = duration ? duration->num_frames(m.duration_head.get(), request, positive.video,
                                                   positive.audio, probe_seconds)
                            : resolve_num_frames(m.duration_head.get(), request, positive.video,
                                                 positive.audio, probe_seconds);
    plan = plan_for(r);
  }
  if (cb.num_frames) cb.num_frames(r.num_frames);
  // Phase boundaries for the apps' progress and timings (each a one-step "stage").
  end_phase(m, cb, "text_encode");

  // Stage 1 runs at half size when stage 2 refines it, else at full size.
  const int scale = plan.refine ? 2 : 1;
  StageSetup s1{"stage1",
                r.height / scale,
                r.width / scale,
                plan.images_as_keyframes,
                {},
                {},
                1.0f,
                NoiseDraw::Stage1Video,
                NoiseDraw::Stage1Audio,
                {}};
  s1.denoise.sigmas = plan.stage1_sigmas;
  s1.denoise.executor = m.options.executors.stage1.get();
  s1.denoise.positive = positive;
  s1.denoise.sampler = plan.stage1_sampler;
  s1.denoise.step_noise = &noise;
  if (plan.guided_stage1)
    s1.denoise.guidance = StageGuidance{MultiModalGuiderFactory::constant(guider_params(r.video_guidance)),
                                        MultiModalGuiderFactory::constant(guider_params(r.audio_guidance)),
                                        {encoded[1].video_context, encoded[1].audio_context},
                                        r.max_batch_size};
  StageResult stage1;
  {
    const StageLoras loras(m, plan.stage1_loras);
    stage1 = run_stage(m, r, std::move(s1), noise, cb);
  }
  StageResult stage2;
  if (plan.refine) stage2 = refine(m, r, plan, stage1, positive, noise, cb);
  const StageResult& last = plan.refine ? stage2 : stage1;

  // An output without video (a .wav) or without audio (--no-audio) skips that decode: the decoder
  // noise is a draw of its own (noise_source.h), so nothing else changes.
  if (output_has_video(r)) {
    m.acquire(ModelPart::VideoDecoder);
    decode_video(m, last.video_latent, noise, cb);
    m.release(ModelPart::VideoDecoder);
    end_phase(m, cb, "video_decode");
  }
  if (output_has_audio(r)) {
    m.acquire(ModelPart::Audio);
    decode_audio(m, plan.audio_from_stage1 ? stage1.audio_latent : last.audio_latent, cb);
    m.release(ModelPart::Audio);
  }
}

}  // namespace ltx2::pipeline
