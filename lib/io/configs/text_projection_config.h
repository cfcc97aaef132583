// Typed config of LTX's text side (feature extractor + video/audio embeddings connectors + the
// 19B DiT's caption projections), read from the checkpoint metadata's config.transformer object
// the way the reference's configurators read it. Unsupported values are refused naming the key.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace ltx2 {

enum class FeatureExtractorKind {
  V1,  // LTX-2 (19B): per-layer masked mean/range normalisation, one shared projection
  V2,  // LTX-2.3+ (22B): per-token RMS, separate video/audio projections with bias
};

struct ConnectorConfig {
  int64_t heads = 30;
  int64_t head_dim = 128;
  int64_t layers = 2;
  double max_pos = 1;                  // connector_positional_embedding_max_pos[0]
  bool double_precision_rope = false;  // frequencies_precision == "float64"
  bool gated_attention = false;
  bool ff_bias = true;
  int64_t registers = 128;  // the reference always builds 128 (the config key is ignored)
  double theta = 10000.0;   // the reference always uses 1e4 (the config key is ignored)
  int64_t inner_dim() const { return heads * head_dim; }
};

struct TextProjectionConfig {
  FeatureExtractorKind extractor = FeatureExtractorKind::V1;
  ConnectorConfig video, audio;
  // DiT-side widths: video inner = num_attention_heads * attention_head_dim, audio likewise.
  int64_t video_inner = 0, audio_inner = 0;
  int64_t caption_channels = 0;
  bool caption_projection = false;  // V1: the DiT owns caption_projection / audio_caption_projection
};

// `transformer` is the metadata config's "transformer" object.
TextProjectionConfig parse_text_projection_config(const nlohmann::json& transformer);

}  // namespace ltx2
