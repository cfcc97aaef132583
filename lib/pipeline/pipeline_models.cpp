// Loading of the pipelines' components from ModelPaths (see pipeline_models.h).
#include "pipeline/pipeline_models.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/configs/vocoder_config.h"
#include "io/layout.h"
#include "io/lora.h"
#include "models/text/gemma3_vision.h"

namespace ltx2::pipeline {

namespace tr = models::transformer;

void probe(const PipelineCallbacks& callbacks, const std::string& name, const Tensor& t) {
  if (callbacks.probe) callbacks.probe(name, t.to(Device::cpu()).to(DType::F32));
}

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

ModelWeightSets open_model_weights(const ModelPaths& paths) {
  ModelWeightSets w;
  if (paths.split()) {
    w.ltx = WeightSet::open({paths.transformer, paths.text_encoder});
    w.video_vae = WeightSet::open({paths.video_vae});
    w.audio = WeightSet::open({paths.audio_vae});
    if (!paths.duration_head.empty()) w.duration_head = WeightSet::open({paths.duration_head});
  } else {
    w.ltx = WeightSet::open({paths.checkpoint});
    w.video_vae = paths.video_vae.empty() ? w.ltx : WeightSet::open({paths.video_vae});
    w.audio = w.ltx;
    w.duration_head = w.ltx;
  }
  return w;
}

ModelFacts read_model_facts(const ModelPaths& paths) {
  // Headers only: the transformer's file (the checkpoint) and the audio's.
  const ModelWeightSets w = open_model_weights(paths);
  const std::string transformer_file = paths.split() ? paths.transformer : paths.checkpoint;
  const std::string audio_file = paths.split() ? paths.audio_vae : paths.checkpoint;
  LTX2_CHECK(w.ltx->config().contains("transformer"), "{}: metadata config needs a 'transformer' section",
             transformer_file);
  LTX2_CHECK(w.audio->config().contains("vocoder"), "{}: metadata config needs a 'vocoder' section",
             audio_file);
  ModelFacts facts;
  facts.vocoder_sample_rate = parse_vocoder_config(w.audio->config().at("vocoder")).output_sampling_rate();
  facts.transformer_blocks = w.ltx->config().at("transformer").value("num_layers", 0);
  facts.model_version = parse_model_version(w.ltx->metadata_value("model_version"));
  facts.duration_head = w.duration_head && has_duration_head(*w.duration_head);
  const Gemma3TextModel::Source gemma = Gemma3TextModel::locate(paths.gemma_source());
  facts.gemma_enhances = !gemma.config.gemma4;
  if (!gemma.raw_config->contains("vision_config") || !Gemma3VisionTower::held_by(*gemma.weights))
    facts.gemma_no_vision =
        fmt::format("{} has no Gemma 3 vision tower ({})", paths.gemma_source(),
                    gemma.raw_config->contains("vision_config")
                        ? "no vision_tower.vision_model.* / multi_modal_projector.* tensors"
                        : "its config has no vision_config");
  video_vae::video_decoder_kind(*w.video_vae);  // a config that disagrees with its weights: refused here
  LTX2_CHECK(paths.duration_head.empty() || facts.duration_head,
             "--duration-head-path {}: holds no duration head (no duration_head.* tensors)",
             paths.duration_head);
  return facts;
}

int resolve_num_frames(const DurationHead* head, const GenerationRequest& r, const Tensor& video_context,
                       const Tensor& audio_context, const std::function<void(const Tensor&)>& probe_seconds) {
  if (r.num_frames != kNumFramesFromDurationHead) return r.num_frames;
  LTX2_CHECK(head, "--num-frames is required: the model has no duration head to predict the length from");
  // The reference's DurationPredictor: the head on both contexts, one prediction for the batch of one.
  const Tensor seconds = head->seconds(video_context.to(Device::cpu()).to(DType::F32),
                                       audio_context.to(Device::cpu()).to(DType::F32));
  LTX2_CHECK(seconds.numel() == 1, "duration head: one prediction expected, got {}", seconds.numel());
  if (probe_seconds) probe_seconds(seconds);
  const auto frames = static_cast<int>(
      duration_to_frames(seconds.item(), r.frame_rate, kDurationMinSeconds, kDurationMaxSeconds));
  for (const ImageCondition& im : r.images)
    LTX2_CHECK(im.frame < frames,
               "--image {}: frame {} is outside the video's {} frames (--num-frames unset: the "
               "duration head's prediction)",
               im.path, im.frame, frames);
  return frames;
}

PipelineOptions PipelineOptions::on_device(Device device) {
  PipelineOptions o;
  o.device = device;
  if (device.is_cuda()) {
    o.transformer_dtype = DType::BF16;
    o.text_encoder_on_device = true;
  }
  return o;
}

std::vector<LoraWithStrength> read_loras(const std::vector<LoraFile>& files) {
  std::vector<LoraWithStrength> out;
  for (const LoraFile& l : files) out.push_back({read_lora_file(l.path), static_cast<float>(l.strength)});
  return out;
}

std::unique_ptr<PipelineModels> PipelineModels::load(const ModelPaths& paths, PipelineKind kind,
                                                     PipelineOptions options) {
  validate_model_paths(paths, kind);
  auto m = std::make_unique<PipelineModels>();
  m->paths = paths;
  m->options = std::move(options);
  ModelWeightSets sets = open_model_weights(paths);
  m->ltx = sets.ltx;
  m->video_vae = sets.video_vae;
  m->audio = sets.audio;
  m->video_decoder_kind = video_vae::video_decoder_kind(*m->video_vae);
  // The head reads the prompt's encoding, which only a process with the text encoder makes (a
  // fleet's other ranks get the frame count by broadcast: parallel::BroadcastDuration).
  if (m->options.load_text_encoder && sets.duration_head && has_duration_head(*sets.duration_head))
    m->duration_head = std::make_unique<DurationHead>(sets.duration_head);
  m->model_version = parse_model_version(m->ltx->metadata_value("model_version"));
  const nlohmann::json& cfg = m->ltx->config();
  LTX2_CHECK(cfg.contains("transformer"), "{}: metadata config has no 'transformer' section",
             m->ltx->describe());
  m->transformer_config = TransformerConfig::parse(cfg.at("transformer"));
  const WeightView view(m->ltx, component_prefixes(Component::Transformer), "transformer");
  m->transformer_weights = std::make_unique<TransformerLoras>(
      tr::TransformerWeights::load(view, m->transformer_config, m->options.transformer_dtype,
                                   m->options.device, m->options.quantization),
      m->options.quantization);
  m->user_loras = read_loras(paths.loras);
  if (!m->user_loras.empty()) m->transformer_weights->fuse(m->user_loras);

  const Device device = m->options.device;
  m->video_encoder = std::make_unique<video_vae::VideoEncoder>(
      video_vae::VideoEncoder::from_weights(m->video_vae, m->vae_dtype(), device));
  const nlohmann::json& audio_cfg = m->audio->config();
  LTX2_CHECK(audio_cfg.contains("audio_vae") && audio_cfg.contains("vocoder"),
             "{}: metadata config needs 'audio_vae' and 'vocoder' sections", m->audio->describe());
  m->audio_config = parse_audio_vae_decoder_config(audio_cfg.at("audio_vae"));
  for (ModelPart part : {ModelPart::Text, ModelPart::Upsampler, ModelPart::VideoDecoder, ModelPart::Audio}) {
    if (part == ModelPart::Text && !m->options.load_text_encoder) continue;
    if (part == ModelPart::Upsampler && !pipeline_traits(kind).refines) continue;
    if (!m->options.residency || m->options.residency->keeps(part)) m->acquire(part);
  }
  return m;
}

tr::Transformer PipelineModels::transformer() const {
  return tr::Transformer(transformer_config, transformer_weights->weights(), options.attention);
}

DType PipelineModels::vae_dtype() const {
  return options.vae_dtype.value_or(options.device.is_cuda() ? DType::BF16 : DType::F32);
}

void PipelineModels::acquire(ModelPart part) {
  const Device device = options.device;
  switch (part) {
    case ModelPart::Text:
      LTX2_CHECK(options.load_text_encoder, "the text encoder is not loaded in this process");
      if (!text) {
        const bool on_device = options.text_encoder_on_device;
        text = std::make_unique<PromptEncoder>(paths.gemma_source(), ltx, kGemmaTokenizerMaxLength,
                                               on_device ? options.transformer_dtype : DType::F32,
                                               on_device ? device : Device::cpu());
      }
      return;
    case ModelPart::Upsampler:
      if (!upsampler)
        upsampler = std::make_unique<upsampler::LatentUpsampler>(upsampler::LatentUpsampler::from_weights(
            WeightSet::open({paths.spatial_upsampler}), vae_dtype(), device));
      return;
    case ModelPart::VideoDecoder:
      if (video_decoder_kind == video_vae::VideoDecoderKind::Diffusion) {
        if (!diffusion_decoder)
          diffusion_decoder = std::make_unique<video_vae::DiffusionVideoDecoder>(
              video_vae::DiffusionVideoDecoder::from_weights(video_vae, vae_dtype(), device));
      } else if (!video_decoder) {
        video_decoder = std::make_unique<video_vae::VideoDecoder>(
            video_vae::VideoDecoder::from_weights(video_vae, vae_dtype(), device));
      }
      return;
    case ModelPart::Audio:
      if (!audio_decoder)
        audio_decoder = std::make_unique<audio_vae::AudioDecoder>(
            audio_vae::AudioDecoder::load(audio_config, audio, vae_dtype(), device));
      if (!vocoder)
        vocoder = std::make_unique<vocoder::Vocoder>(vocoder::Vocoder::load(
            parse_vocoder_config(audio->config().at("vocoder")), audio, vae_dtype(), device));
      return;
    case ModelPart::Transformer:
    case ModelPart::VideoEncoder: return;  // loaded once, always
  }
}

void PipelineModels::release(ModelPart part) {
  if (!options.residency || options.residency->keeps(part)) return;
  switch (part) {
    case ModelPart::Text: text.reset(); return;
    case ModelPart::Upsampler: upsampler.reset(); return;
    case ModelPart::VideoDecoder:
      video_decoder.reset();
      diffusion_decoder.reset();
      return;
    case ModelPart::Audio:
      audio_decoder.reset();
      vocoder.reset();
      return;
    case ModelPart::Transformer:
    case ModelPart::VideoEncoder: return;
  }
}

}  // namespace ltx2::pipeline
