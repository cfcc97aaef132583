// TransformerConfig parsing: defaults, the real variants' values, and refusals naming the key.
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/configs/transformer_config.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json fixture_config(const std::string& c) {
  std::ifstream f(test::golden_dir(c) + "/case.json");
  return json::parse(f).at("config_transformer");
}

}  // namespace

TEST_CASE("transformer config: the fixture variants parse to their features") {
  const TransformerConfig c19 = TransformerConfig::parse(fixture_config("transformer_19b"));
  REQUIRE(c19.caption_projection);
  REQUIRE(c19.caption_channels == 24);
  REQUIRE(c19.rope_float64_grid);
  REQUIRE(c19.av_ca_timestep_scale_multiplier == 1000.0);
  REQUIRE(c19.adaln_rows() == 6);
  REQUIRE(c19.video_dim() == 32);
  const TransformerConfig legacy = TransformerConfig::parse(fixture_config("transformer_19b_legacy"));
  REQUIRE(legacy.rope_layout == RopeLayout::Interleaved);
  REQUIRE_FALSE(legacy.rope_float64_grid);
  REQUIRE(legacy.av_ca_timestep_scale_multiplier == 1.0);  // the code default
  const TransformerConfig c25 = TransformerConfig::parse(fixture_config("transformer_25"));
  REQUIRE_FALSE(c25.caption_projection);
  REQUIRE(c25.gated_attention);
  REQUIRE(c25.adaln_rows() == 9);
  REQUIRE(c25.has_prompt_adaln());
  REQUIRE_FALSE(c25.video_ff_bias);
  REQUIRE(c25.audio_ff_bias);
  REQUIRE(c25.keyframe_embedding);
}

TEST_CASE("transformer config: unknown, unsupported or missing values are refused by key") {
  const json base = fixture_config("transformer_22b");
  auto with = [&](const std::string& key, const json& value) {
    json j = base;
    j[key] = value;
    return j;
  };
  REQUIRE_THROWS_WITH(TransformerConfig::parse(with("use_magic", true)), Contains("'use_magic'"));
  REQUIRE_THROWS_WITH(TransformerConfig::parse(with("rope_type", "spiral")),
                      Contains("'rope_type'") && Contains("spiral"));
  REQUIRE_THROWS_WITH(TransformerConfig::parse(with("qk_norm", "layer_norm")), Contains("'qk_norm'"));
  REQUIRE_THROWS_WITH(TransformerConfig::parse(with("audio_num_attention_heads", 4)),
                      Contains("'audio_num_attention_heads'"));
  REQUIRE_THROWS_WITH(TransformerConfig::parse(with("cross_attention_dim", 48)),
                      Contains("'cross_attention_dim'"));
  REQUIRE_THROWS_WITH(TransformerConfig::parse(with("num_layers", 0)), Contains("'num_layers'"));
  REQUIRE_THROWS_WITH(TransformerConfig::parse(with("positional_embedding_max_pos", json::array({20, 2048}))),
                      Contains("'positional_embedding_max_pos'"));
  json missing = base;
  missing.erase("share_ff");
  REQUIRE_THROWS_WITH(TransformerConfig::parse(missing), Contains("'share_ff'") && Contains("missing"));
  json no_caption = fixture_config("transformer_19b");
  no_caption.erase("caption_channels");
  REQUIRE_THROWS_WITH(TransformerConfig::parse(no_caption), Contains("'caption_channels'"));
  // Connector and text-encoder keys belong to other components and are accepted.
  REQUIRE_NOTHROW(TransformerConfig::parse(with("connector_num_layers", 3)));
  REQUIRE_NOTHROW(TransformerConfig::parse(with("_diffusers_version", "0.25.1")));  // in the real 19B config
}
