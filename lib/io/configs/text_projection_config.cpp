// Text-side config parsing (encoder_configurator._create_feature_extractor and the
// Embeddings1DConnector configurators of the reference).
#include "io/configs/text_projection_config.h"

#include "core/error.h"
#include "io/config_reader.h"

namespace ltx2 {

TextProjectionConfig parse_text_projection_config(const nlohmann::json& transformer) {
  ConfigReader r(transformer, "transformer");
  TextProjectionConfig c;

  static const char* const kV2Keys[] = {"caption_proj_before_connector", "caption_projection_first_linear",
                                        "caption_proj_input_norm", "caption_projection_second_linear"};
  int present = 0;
  for (const char* k : kV2Keys) present += r.has(k);
  if (present == 0) {
    c.extractor = FeatureExtractorKind::V1;
  } else {
    for (const char* k : kV2Keys)
      if (!r.has(k)) r.fail(k, "is missing while other caption-projection keys are set (not supported)");
    r.require_equal("caption_proj_before_connector", true);
    r.require_equal("caption_projection_first_linear", false);
    r.require_equal("caption_proj_input_norm", false);
    r.require_equal("caption_projection_second_linear", false);
    c.extractor = FeatureExtractorKind::V2;
  }
  c.caption_projection = c.extractor == FeatureExtractorKind::V1;
  c.video_inner = r.integer("num_attention_heads", 32) * r.integer("attention_head_dim", 128);
  c.audio_inner = r.integer("audio_num_attention_heads", 32) * r.integer("audio_attention_head_dim", 64);
  c.caption_channels = r.integer("caption_channels", 3840);

  r.choice("rope_type", {"split"}, "split");
  std::vector<int64_t> max_pos = r.integers("connector_positional_embedding_max_pos", {1});
  LTX2_CHECK(max_pos.size() == 1 && max_pos[0] > 0,
             "transformer config: 'connector_positional_embedding_max_pos' must hold one positive value");
  ConnectorConfig& v = c.video;
  v.heads = r.integer("connector_num_attention_heads", 30);
  v.head_dim = r.integer("connector_attention_head_dim", 128);
  v.layers = r.integer("connector_num_layers", 2);
  v.max_pos = static_cast<double>(max_pos[0]);
  v.double_precision_rope = r.has("frequencies_precision") && r.string("frequencies_precision") == "float64";
  v.gated_attention = r.boolean("connector_apply_gated_attention", false);
  v.ff_bias = r.boolean("connector_ff_bias", true);
  c.audio = v;
  c.audio.heads = r.integer("audio_connector_num_attention_heads", v.heads);
  c.audio.head_dim = r.integer("audio_connector_attention_head_dim", v.head_dim);
  c.audio.layers = r.integer("audio_connector_num_layers", v.layers);
  LTX2_CHECK(v.heads > 0 && v.head_dim > 0 && v.head_dim % 2 == 0 && c.audio.heads > 0 &&
                 c.audio.head_dim > 0 && c.audio.head_dim % 2 == 0 && v.layers >= 0 && c.audio.layers >= 0,
             "transformer config: connector heads / head dims / layers are not valid");
  return c;
}

}  // namespace ltx2
