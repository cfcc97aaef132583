// The text connector's parts on their own: the config rules that pick V1 / V2, the right-pad reordering, and
// the connector's refusals. (Parity of the whole path is checked against connector_19b / connector_22b by
// golden_check and test_prompt_encoder.)
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

TEST_CASE("connector: scattered pad rows and runs across a register period take register t % 128") {
  auto set = WeightSet::open({test::golden_dir("connector_19b") + "/weights.safetensors"});
  TextProjectionConfig config =
      parse_text_projection_config(json::parse(set->metadata_value("config"))["transformer"]);
  const WeightView view =
      WeightView(set, component_prefixes(Component::Transformer), "t").sub("video_embeddings_connector.");
  EmbeddingsConnector connector(config.video, view);
  const int64_t T = 256, inner = config.video.inner_dim();
  const Tensor registers = view.load("learnable_registers", {128, inner});
  std::vector<int64_t> m(T, 1);
  for (int64_t t : {0, 5, 6, 7, 126, 127, 128, 129, 255}) m[t] = 0;
  const Tensor x = test::random_tensor({1, T, inner}, 7);
  Tensor filled = x.clone();
  for (int64_t t = 0; t < T; ++t)
    if (!m[t]) filled.select(0, 0).select(0, t).copy_(registers.select(0, t % 128));
  const Tensor got = connector.forward(x, Tensor::from_vector_i64(m, {1, T}));
  const Tensor want = connector.forward(filled, Tensor::from_vector_i64(std::vector<int64_t>(T, 1), {1, T}));
  REQUIRE(test::max_abs_diff(got, want) == 0.0f);
}

TEST_CASE("embeddings processor: scattered pads are gathered into right-pad order row by row") {
  auto set = WeightSet::open({test::golden_dir("connector_22b") + "/weights.safetensors"});
  EmbeddingsProcessor processor(set);
  const int64_t T = 256, Fv = processor.config().video.inner_dim(), Fa = processor.config().audio.inner_dim();
  std::vector<int64_t> m(2 * T, 1);
  for (int64_t t : {0, 1, 9, 10, 11, 40, 200, 255}) m[t] = 0;
  for (int64_t t = 0; t < 30; ++t) m[T + 3 * t] = 0;
  const Tensor mask = Tensor::from_vector_i64(m, {2, T});
  const TextFeatures features{Tensor(), test::random_tensor({2, T, Fv}, 8),
                              test::random_tensor({2, T, Fa}, 9)};
  // The same rows moved one at a time, handed over with the mask already in right-pad order.
  const std::vector<int64_t> order = right_pad_order(mask);
  TextFeatures sorted{Tensor(), Tensor::empty({2, T, Fv}), Tensor::empty({2, T, Fa})};
  std::vector<int64_t> sorted_mask(2 * T);
  for (int64_t i = 0; i < 2 * T; ++i) {
    const int64_t b = i / T, t = i % T, src = order[i];
    sorted.video.select(0, b).select(0, t).copy_(features.video.select(0, b).select(0, src));
    sorted.audio.select(0, b).select(0, t).copy_(features.audio.select(0, b).select(0, src));
    sorted_mask[i] = m[b * T + src];
  }
  const TextContext got = processor.connect(features, mask);
  const TextContext want = processor.connect(sorted, Tensor::from_vector_i64(sorted_mask, {2, T}));
  REQUIRE(test::max_abs_diff(got.video, want.video) == 0.0f);
  REQUIRE(test::max_abs_diff(got.audio, want.audio) == 0.0f);
}
