#include "io/layout.h"

namespace ltx2 {

namespace {
bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool ends(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

const char* component_name(Component c) {
  switch (c) {
    case Component::Transformer: return "transformer";
    case Component::TextConnector: return "text_connector";
    case Component::VideoDecoder: return "video_vae_decoder";
    case Component::VideoEncoder: return "video_vae_encoder";
    case Component::VideoStats: return "video_vae_statistics";
    case Component::AudioDecoder: return "audio_vae_decoder";
    case Component::AudioEncoder: return "audio_vae_encoder";
    case Component::AudioStats: return "audio_vae_statistics";
    case Component::Vocoder: return "vocoder";
    case Component::LatentUpsampler: return "latent_upsampler";
    case Component::TextModel: return "gemma_text_model";
    case Component::VisionTower: return "gemma_vision";
    case Component::TextAssets: return "gemma_assets";
    case Component::DurationHead: return "duration_head";
    case Component::Lora: return "lora";
    case Component::Other: return "other";
  }
  return "?";
}

const char* component_config_key(Component c) {
  switch (c) {
    case Component::Transformer: case Component::TextConnector: return "transformer";
    case Component::VideoDecoder: case Component::VideoEncoder: case Component::VideoStats: return "vae";
    case Component::AudioDecoder: case Component::AudioEncoder: case Component::AudioStats:
      return "audio_vae";
    case Component::Vocoder: return "vocoder";
    case Component::DurationHead: return "duration_head";
    case Component::LatentUpsampler: case Component::TextModel: return "";
    default: return nullptr;
  }
}

Component classify_key(const std::string& k) {
  // ".alpha" alone is not enough: BigVGAN's SnakeBeta parameters are named ".alpha" too.
  if (ends(k, ".lora_A.weight") || ends(k, ".lora_B.weight") ||
      (ends(k, ".alpha") && (starts(k, "diffusion_model.") || starts(k, "lora_"))))
    return Component::Lora;
  if (starts(k, "model.diffusion_model.video_embeddings_connector.") ||
      starts(k, "model.diffusion_model.audio_embeddings_connector.") ||
      starts(k, "text_embedding_projection."))
    return Component::TextConnector;
  if (starts(k, "model.diffusion_model.") || starts(k, "diffusion_model.")) return Component::Transformer;
  if (starts(k, "vae.decoder.") || starts(k, "decoder.")) return Component::VideoDecoder;
  if (starts(k, "vae.encoder.") || starts(k, "encoder.")) return Component::VideoEncoder;
  if (starts(k, "vae.per_channel_statistics.") || starts(k, "per_channel_statistics."))
    return Component::VideoStats;
  if (starts(k, "audio_vae.decoder.")) return Component::AudioDecoder;
  if (starts(k, "audio_vae.encoder.")) return Component::AudioEncoder;
  if (starts(k, "audio_vae.per_channel_statistics.")) return Component::AudioStats;
  if (starts(k, "vocoder.")) return Component::Vocoder;
  if (starts(k, "initial_conv.") || starts(k, "initial_norm.") || starts(k, "res_blocks.") ||
      starts(k, "upsampler.") || starts(k, "post_upsample_res_blocks.") || starts(k, "final_conv."))
    return Component::LatentUpsampler;
  if (starts(k, "language_model.") || starts(k, "model.language_model.") || starts(k, "model.layers.") ||
      starts(k, "model.embed_tokens.") || starts(k, "model.norm."))
    return Component::TextModel;
  if (starts(k, "duration_head.")) return Component::DurationHead;
  if (k == kTokenizerJsonTensor || k == kSentencePieceTensor || starts(k, "hf_asset__"))
    return Component::TextAssets;
  if (starts(k, "vision_tower.") || starts(k, "multi_modal_projector.") ||
      starts(k, "model.vision_tower.") || starts(k, "model.multi_modal_projector."))
    return Component::VisionTower;
  // Gemma 4 (gemma4_unified)'s image and audio embedders: Hugging Face's and ComfyUI's names.
  if (starts(k, "model.vision_embedder.") || starts(k, "model.embed_vision.") ||
      starts(k, "model.embed_audio.") || starts(k, "vision_model.") || starts(k, "audio_projector."))
    return Component::VisionTower;
  return Component::Other;
}

std::vector<ComponentSummary> summarize_components(const WeightSet& set) {
  std::map<Component, ComponentSummary> by;
  for (const auto& f : set.files()) {
    for (const auto& t : f->tensors()) {
      Component c = classify_key(t.name);
      auto& s = by.try_emplace(c, ComponentSummary{c, 0, 0, {}}).first->second;
      s.tensors++;
      s.bytes += t.end - t.begin;
      s.dtypes[dtype_safetensors_name(t.dtype)]++;
    }
  }
  std::vector<ComponentSummary> out;
  for (auto& [c, s] : by) out.push_back(s);
  return out;
}

std::vector<std::string> component_prefixes(Component c) {
  switch (c) {
    case Component::Transformer: return {"model.diffusion_model.", "diffusion_model."};
    case Component::TextConnector: return {""};
    case Component::VideoDecoder: return {"vae.decoder.", "decoder."};
    case Component::VideoEncoder: return {"vae.encoder.", "encoder."};
    case Component::VideoStats: return {"vae.per_channel_statistics.", "per_channel_statistics."};
    case Component::AudioDecoder: return {"audio_vae.decoder."};
    case Component::AudioEncoder: return {"audio_vae.encoder."};
    case Component::AudioStats: return {"audio_vae.per_channel_statistics."};
    case Component::Vocoder: return {"vocoder."};
    case Component::LatentUpsampler: return {""};
    case Component::TextModel: return {"language_model.model.", "model.language_model.", "model."};
    default: return {""};
  }
}

}  // namespace ltx2
