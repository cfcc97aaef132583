#include "golden/kinds.h"

#include <map>

namespace ltx2::golden {

namespace {
std::map<std::string, KindRunner>& runners() {
  static std::map<std::string, KindRunner> m;
  return m;
}
}  // namespace

bool register_kind_runner(const char* kind, KindRunner run) {
  runners()[kind] = run;
  return true;
}

const std::vector<Kind>& kinds() {
  // Order matters where markers nest: more specific markers first.
  static const std::vector<Kind> table = {
      // Prequantized FP8 transformer checkpoints (issue 15): before "transformer", which they match too.
      {"transformer_fp8", "quantization.checkpoint", "FP8", nullptr},
      {"transformer", "component", "ltx_core.model.transformer", nullptr},
      {"diffusion_video_decoder_tiled", "what", "CausalDiffusionVAE tiled decode", nullptr},
      {"diffusion_video_decoder", "what", "CausalDiffusionVAE decoder", nullptr},
      {"video_vae_tiled_decode", "component", "video VAE single-GPU tiled decode", nullptr},
      {"video_vae_decoder", "component", "video VAE decoder", nullptr},
      {"video_vae_encoder", "component", "video VAE encoder", nullptr},
      {"latent_upsampler", "component", "latent spatial upsampler", nullptr},
      {"audio_vae_decoder", "component", "audio VAE decoder", nullptr},
      {"vocoder", "component", "vocoder", nullptr},
      {"gemma3", "what", "Gemma 3 hidden states", nullptr},
      {"gemma4", "what", "Gemma 4 (gemma4_unified)", nullptr},
      {"connector", "what", "FeatureExtractor", nullptr},
      {"text_encoder_file", "what", "single-file text encoder", nullptr},
      {"enhance_prompt_image", "what", "prompt enhancement with an image", nullptr},
      {"enhance_prompt", "what", "prompt enhancement", nullptr},
      {"duration_head", "what", "DurationHead", nullptr},
      {"schedulers", "what", "sigma schedules", nullptr},
      {"guiders", "what", "guider", nullptr},
      {"diffusion_steps", "what", "single diffusion steps", nullptr},
      {"positions", "what", "latent-tool positions", nullptr},
      {"latent_state", "what", "latent state construction", nullptr},
      {"lora_fuse", "what", "LoRA fusion", nullptr},
      {"fp8_cast_stochastic_fuse", "what", "fp8-cast LoRA fuse on CUDA", nullptr},
      {"lora_tracker_sim", "what", "_apply_loras_inplace", nullptr},
      {"sharded_ownership", "what", "_stable_owner", nullptr},
      {"sharded_plan", "what", "ShardedSD.from_state_dict", nullptr},
      {"sp_padding", "what", "Sequence-parallel video token padding", nullptr},
      {"tdp_rank_sim", "what", "TiledDataParallelModelWrapper", nullptr},
      {"tdp_tiles", "what", "Tiled-data-parallel tiling", nullptr},
      {"vae_rank_sim", "what", "DistributedVideoDecoder", nullptr},
      {"vae_tiles", "what", "Distributed VAE decoder tile split", nullptr},
      {"pipeline_distilled", "what", "DistilledPipeline", nullptr},
      {"pipeline_ti2vid", "what", "TI2VidTwoStagesPipeline", nullptr},
      {"pipeline_one_stage", "what", "TI2VidOneStagePipeline", nullptr},
      {"pipeline_keyframes", "what", "KeyframeInterpolationPipeline", nullptr},
      {"pipeline_hq", "what", "TI2VidTwoStagesHQPipeline", nullptr},
  };
  static const std::vector<Kind> with_runners = [] {
    std::vector<Kind> t = table;
    for (Kind& k : t) {
      auto it = runners().find(k.name);
      if (it != runners().end()) k.run = it->second;
    }
    return t;
  }();
  return with_runners;
}

const Kind* classify(const GoldenCase& c) {
  for (const Kind& k : kinds()) {
    // The field may be a path into nested objects ("quantization.checkpoint").
    const nlohmann::json* value = &c.spec();
    std::string path = k.field;
    for (size_t dot; value && (dot = path.find('.')) != std::string::npos; path = path.substr(dot + 1)) {
      auto it = value->find(path.substr(0, dot));
      value = it != value->end() && it->is_object() ? &*it : nullptr;
    }
    if (!value) continue;
    auto it = value->find(path);
    if (it == value->end() || !it->is_string()) continue;
    if (it->get<std::string>().find(k.marker) != std::string::npos) return &k;
  }
  return nullptr;
}

}  // namespace ltx2::golden
