// Loading of the pipelines' components from ModelPaths (see pipeline_models.h).
#include "pipeline/pipeline_models.h"

#include "core/error.h"
#include "io/layout.h"
#include "io/lora.h"

namespace ltx2::pipeline {

namespace tr = models::transformer;

std::vector<int> parse_model_version(const std::string& text) {
  std::vector<int> parts;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    int value = 0;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') value = value * 10 + (text[j++] - '0');
    if (j == i) break;
    parts.push_back(value);
    while (j < text.size() && text[j] != '.' && text[j] != '-') ++j;
    i = j + 1;
  }
  return parts;
}

std::unique_ptr<PipelineModels> PipelineModels::load(const ModelPaths& paths, PipelineKind kind,
                                                     PipelineOptions options) {
  validate_model_paths(paths, kind);
  auto m = std::make_unique<PipelineModels>();
  m->options = std::move(options);
  if (paths.split()) {
    m->ltx = WeightSet::open({paths.transformer, paths.text_encoder, paths.audio_vae});
    m->video_vae = WeightSet::open({paths.video_vae});
  } else {
    m->ltx = WeightSet::open({paths.checkpoint});
    m->video_vae = paths.video_vae.empty() ? m->ltx : WeightSet::open({paths.video_vae});
  }
  m->model_version = parse_model_version(m->ltx->metadata_value("model_version"));
  const nlohmann::json& cfg = m->ltx->config();
  LTX2_CHECK(cfg.contains("transformer"), "{}: metadata config has no 'transformer' section",
             m->ltx->describe());
  m->transformer_config = TransformerConfig::parse(cfg.at("transformer"));
  const WeightView view(m->ltx, component_prefixes(Component::Transformer), "transformer");
  m->transformer_weights = std::make_unique<TransformerLoras>(tr::TransformerWeights::load(
      view, m->transformer_config, m->options.transformer_dtype, m->options.device));
  for (const LoraFile& l : paths.loras)
    m->user_loras.push_back({read_lora_file(l.path), static_cast<float>(l.strength)});
  if (!m->user_loras.empty()) m->transformer_weights->fuse(m->user_loras);

  const Device device = m->options.device;
  const bool text_on_device = m->options.text_encoder_on_device;
  m->text = std::make_unique<PromptEncoder>(paths.gemma_root, m->ltx, kGemmaTokenizerMaxLength,
                                            text_on_device ? m->options.transformer_dtype : DType::F32,
                                            text_on_device ? device : Device::cpu());
  const DType vae_dtype = m->options.vae_dtype.value_or(device.is_cuda() ? DType::BF16 : DType::F32);
  m->video_encoder = std::make_unique<video_vae::VideoEncoder>(
      video_vae::VideoEncoder::from_weights(m->video_vae, vae_dtype, device));
  m->video_decoder = std::make_unique<video_vae::VideoDecoder>(
      video_vae::VideoDecoder::from_weights(m->video_vae, vae_dtype, device));
  m->upsampler = std::make_unique<upsampler::LatentUpsampler>(upsampler::LatentUpsampler::from_weights(
      WeightSet::open({paths.spatial_upsampler}), vae_dtype, device));
  LTX2_CHECK(cfg.contains("audio_vae") && cfg.contains("vocoder"),
             "{}: metadata config needs 'audio_vae' and 'vocoder' sections", m->ltx->describe());
  m->audio_decoder = std::make_unique<audio_vae::AudioDecoder>(audio_vae::AudioDecoder::load(
      parse_audio_vae_decoder_config(cfg.at("audio_vae")), m->ltx, vae_dtype, device));
  m->vocoder = std::make_unique<vocoder::Vocoder>(
      vocoder::Vocoder::load(parse_vocoder_config(cfg.at("vocoder")), m->ltx, vae_dtype, device));
  return m;
}

tr::Transformer PipelineModels::transformer() const {
  return tr::Transformer(transformer_config, transformer_weights->weights(), options.attention);
}

}  // namespace ltx2::pipeline
