// Check runner for "connector" cases: our feature extractor (V1 or V2, chosen by the checkpoint
// config as the reference chooses it), right-pad reordering and video/audio embeddings connectors
// on the case's Gemma hidden states, plus the 19B DiT-side caption projections when recorded.
#include <nlohmann/json.hpp>

#include "golden/kinds.h"
#include "io/configs/gemma_config.h"
#include "io/layout.h"
#include "models/text/caption_projection.h"
#include "models/text/embeddings_processor.h"

namespace ltx2::golden {

namespace {

Tensor as_f32(const std::vector<int64_t>& v, const Shape& s) {
  return Tensor::from_vector_i64(v, s).to(DType::F32);
}

void run_connector(const GoldenCase& c, Report& report) {
  Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  auto set = c.weights();
  EmbeddingsProcessor processor(set);
  const TextProjectionConfig& config = processor.config();

  if (c.spec().contains("gemma_text_config")) {
    const nlohmann::json& g = c.spec()["gemma_text_config"];
    GemmaConfig gemma;
    gemma.hidden_size = g.at("hidden_size").get<int64_t>();
    gemma.num_layers = g.at("num_hidden_layers").get<int64_t>();
    processor.feature_extractor().check_gemma(gemma, c.path("case.json"));
  }

  Tensor all = c.tensor("in.hidden_states"), mask = c.tensor("in.attention_mask");
  std::vector<Tensor> states;
  for (int64_t l = 0; l < all.size(0); ++l) states.push_back(all.select(0, l));
  TextFeatures features = processor.feature_extractor().forward(states, mask);
  if (c.has("mid.normed_flat"))
    report.check("mid.normed_flat", features.normed_flat, c.tensor("mid.normed_flat"), tol);
  if (c.has("mid.video_features"))
    report.check("mid.video_features", features.video, c.tensor("mid.video_features"), tol);
  if (c.has("mid.audio_features"))
    report.check("mid.audio_features", features.audio, c.tensor("mid.audio_features"), tol);
  if (c.has("mid.right_pad_sort_idx"))
    report.check("mid.right_pad_sort_idx", as_f32(right_pad_order(mask), mask.shape()),
                 c.tensor("mid.right_pad_sort_idx").to(DType::F32), Tolerance{});

  TextContext ctx = processor.connect(features, mask);
  report.check("out.video_encoding", ctx.video, c.tensor("out.video_encoding"), tol);
  report.check("out.audio_encoding", ctx.audio, c.tensor("out.audio_encoding"), tol);
  report.check("out.attention_mask", ctx.mask.to(DType::F32), c.tensor("out.attention_mask").to(DType::F32),
               Tolerance{});

  WeightView dit(set, component_prefixes(Component::Transformer), "transformer");
  if (c.has("out.video_context_projected")) {
    CaptionProjection video(dit.sub("caption_projection."), config.caption_channels, config.video_inner);
    report.check("out.video_context_projected", video.forward(ctx.video),
                 c.tensor("out.video_context_projected"), tol);
  }
  if (c.has("out.audio_context_projected")) {
    CaptionProjection audio(dit.sub("audio_caption_projection."), config.caption_channels,
                            config.audio_inner);
    report.check("out.audio_context_projected", audio.forward(ctx.audio),
                 c.tensor("out.audio_context_projected"), tol);
  }
}

}  // namespace

static const bool registered = register_kind_runner("connector", &run_connector);

}  // namespace ltx2::golden
