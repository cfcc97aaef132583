// See synthesized_models.h.
#include "model_sets/synthesized_models.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/configs/audio_vae_config.h"
#include "io/configs/text_projection_config.h"
#include "io/configs/transformer_config.h"
#include "io/configs/upsampler_config.h"
#include "io/configs/video_vae_config.h"
#include "io/configs/vocoder_config.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/text/embeddings_connector.h"
#include "models/text/feature_extractor.h"
#include "models/text/gemma3.h"
#include "models/transformer/weights.h"
#include "models/upsampler/latent_upsampler.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/encoder.h"
#include "models/vocoder/vocoder.h"

namespace ltx2::model_sets {

using json = nlohmann::json;

void synthesize_checkpoint(const std::shared_ptr<WeightSynthesizer>& s, const json& config,
                           const GemmaConfig& gemma) {
  const json& transformer = config.at("transformer");
  models::transformer::TransformerWeights::load(WeightView(s, "model.diffusion_model.", "transformer"),
                                                TransformerConfig::parse(transformer));

  // The extractor reads Gemma's depth off its projection's width, so the (first) projection is
  // made before the extractor's loader runs.
  const TextProjectionConfig text = parse_text_projection_config(transformer);
  const int64_t flat = text.caption_channels * gemma.num_hidden_states();
  if (text.extractor == FeatureExtractorKind::V1)
    s->make("text_embedding_projection.aggregate_embed.weight", {text.caption_channels, flat});
  else
    s->make("text_embedding_projection.video_aggregate_embed.weight", {text.video_inner, flat});
  FeatureExtractor(text, WeightView(s, "text_embedding_projection.", "text projection"));
  EmbeddingsConnector(text.video,
                      WeightView(s, "model.diffusion_model.video_embeddings_connector.", "video connector"));
  EmbeddingsConnector(text.audio,
                      WeightView(s, "model.diffusion_model.audio_embeddings_connector.", "audio connector"));

  const WeightView video_stats(s, "vae.per_channel_statistics.", "video VAE statistics");
  video_vae::VideoDecoder(VideoDecoderConfig::from_metadata(config),
                          WeightView(s, "vae.decoder.", "video VAE decoder"), video_stats);
  video_vae::VideoEncoder(VideoEncoderConfig::from_metadata(config),
                          WeightView(s, "vae.encoder.", "video VAE encoder"), video_stats);
  audio_vae::AudioDecoder(parse_audio_vae_decoder_config(config.at("audio_vae")),
                          WeightView(s, "audio_vae.decoder.", "audio VAE decoder"),
                          WeightView(s, "audio_vae.per_channel_statistics.", "audio VAE statistics"));
  vocoder::Vocoder(parse_vocoder_config(config.at("vocoder")), WeightView(s, "vocoder.", "vocoder"));
}

void synthesize_upsampler(const std::shared_ptr<WeightSynthesizer>& s, const json& config) {
  upsampler::LatentUpsampler(UpsamplerConfig::from_metadata(config), WeightView(s, "", "latent upsampler"));
}

void synthesize_gemma_text(const std::shared_ptr<WeightSynthesizer>& s, const GemmaConfig& gemma) {
  Gemma3TextModel(gemma, WeightView(s, "language_model.model.", "gemma text model"));
}

std::vector<LoraTarget> lora_targets(const std::vector<std::pair<std::string, Shape>>& checkpoint,
                                     int64_t rank) {
  const std::string dit = "model.diffusion_model.", blocks = dit + "transformer_blocks.", weight = ".weight";
  std::vector<LoraTarget> out;
  for (const auto& [name, shape] : checkpoint) {
    if (name.compare(0, blocks.size(), blocks) != 0 || shape.size() != 2 || name.size() < weight.size() ||
        name.compare(name.size() - weight.size(), weight.size(), weight) != 0)
      continue;
    const std::string module =
        "diffusion_model." + name.substr(dit.size(), name.size() - dit.size() - weight.size());
    out.push_back({module + ".lora_A.weight", module + ".lora_B.weight", {rank, shape[1]}, {shape[0], rank}});
  }
  return out;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  LTX2_CHECK(f != nullptr, "{}: cannot create: {}", tmp, std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    LTX2_FAIL("{}: write failed: {}", path, std::strerror(err));
  }
}

}  // namespace ltx2::model_sets
