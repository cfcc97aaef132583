// The text connector's parts on their own: the config rules that pick V1 / V2, the right-pad reordering, and
// the connector's refusals. (Parity of the whole path is checked against connector_19b / connector_22b by
// `ltx2 check` and test_prompt_encoder.)
#include "core/error.h"
#include "io/configs/text_projection_config.h"
#include "io/layout.h"
#include "models/text/embeddings_connector.h"
#include "models/text/embeddings_processor.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "text_fixtures.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using json = nlohmann::json;

TEST_CASE("text projection config: V1 without caption-projection keys, V2 with exactly the 22B set") {
  json v1 = {{"connector_num_attention_heads", 2}, {"connector_attention_head_dim", 8}};
  TextProjectionConfig a = parse_text_projection_config(v1);
  REQUIRE(a.extractor == FeatureExtractorKind::V1);
  REQUIRE(a.caption_projection);
  REQUIRE(a.audio.inner_dim() == 16);  // audio falls back to the video connector's shape
  REQUIRE_FALSE(a.video.double_precision_rope);

  TextProjectionConfig b = parse_text_projection_config(
      json::parse(SafetensorsFile::open(test::golden_dir("connector_22b") + "/weights.safetensors")
                      ->metadata_value("config"))["transformer"]);
  REQUIRE(b.extractor == FeatureExtractorKind::V2);
  REQUIRE(b.video.inner_dim() == 64);
  REQUIRE(b.audio.inner_dim() == 32);
  REQUIRE(b.video.gated_attention);
  REQUIRE(b.video.double_precision_rope);
  REQUIRE(b.video.max_pos == 4096);

  json partial = {{"caption_proj_before_connector", true}};
  REQUIRE_THROWS_WITH(parse_text_projection_config(partial), Contains("caption_projection_first_linear"));
  json other = {{"caption_proj_before_connector", true},
                {"caption_projection_first_linear", true},
                {"caption_proj_input_norm", false},
                {"caption_projection_second_linear", false}};
  REQUIRE_THROWS_WITH(parse_text_projection_config(other), Contains("caption_projection_first_linear"));
  json interleaved = {{"rope_type", "interleaved"}};
  REQUIRE_THROWS_WITH(parse_text_projection_config(interleaved), Contains("rope_type"));
}

TEST_CASE("embeddings processor: right-pad order puts valid tokens first, both in their order") {
  Tensor mask = Tensor::from_vector_i64({0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1}, {2, 6});
  REQUIRE(right_pad_order(mask) == std::vector<int64_t>{2, 3, 5, 0, 1, 4, 0, 1, 2, 3, 4, 5});
}

TEST_CASE("connector: the sequence must be a multiple of the register count") {
  auto set = WeightSet::open({test::golden_dir("connector_19b") + "/weights.safetensors"});
  TextProjectionConfig config =
      parse_text_projection_config(json::parse(set->metadata_value("config"))["transformer"]);
  EmbeddingsConnector connector(
      config.video,
      WeightView(set, component_prefixes(Component::Transformer), "t").sub("video_embeddings_connector."));
  Tensor x = Tensor::zeros({1, 100, config.video.inner_dim()});
  Tensor mask = Tensor::from_vector_i64(std::vector<int64_t>(100, 1), {1, 100});
  REQUIRE_THROWS_WITH(connector.forward(x, mask), Contains("multiple of the 128 learnable registers"));
  // A row that is all pads becomes the tiled registers, which then run through the blocks.
  Tensor pads = Tensor::from_vector_i64(std::vector<int64_t>(256, 0), {1, 256});
  Tensor out = connector.forward(Tensor::zeros({1, 256, config.video.inner_dim()}), pads);
  REQUIRE(test::max_abs_diff(out.narrow(1, 0, 128), out.narrow(1, 128, 128)) > 0);  // RoPE differs by row
}

TEST_CASE("feature extractor: a Gemma of the wrong shape is refused with both shapes named") {
  auto set = WeightSet::open({test::golden_dir("connector_22b") + "/weights.safetensors"});
  EmbeddingsProcessor processor(set);
  GemmaConfig gemma;
  gemma.hidden_size = 3840;
  gemma.num_layers = 48;
  REQUIRE_THROWS_WITH(processor.feature_extractor().check_gemma(gemma, "gemma-3-12b"),
                      Contains("hidden size 3840 and 48 layers") && Contains("hidden size 16 and 3 layers"));
  std::vector<Tensor> two = {Tensor::zeros({1, 128, 16}), Tensor::zeros({1, 128, 16})};
  REQUIRE_THROWS_WITH(processor.process(two, Tensor::from_vector_i64(std::vector<int64_t>(128, 1), {1, 128})),
                      Contains("got 2 hidden states, expects 4"));
}
