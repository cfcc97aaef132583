// Check runner for "gemma4" cases (tests/data/golden/gemma4_tiny): the reference's LTX-2.5 text path
// with a Gemma 4 (gemma4_unified) text encoder, from the case's packed text-encoder file (ComfyUI's
// flat key names) and its split layout's transformer file (the connectors and the config):
//   - Gemma4TextModel on the short batch: every hidden state (pad rows zeroed, and raw when
//     recorded), the last hidden state, and the feature extractor's video / audio features;
//   - PromptEncoder on each prompt, as --text-encoder-path runs it: the tokens exactly, the features
//     handed to the connectors (valid rows), the video and audio contexts.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "golden/encoded_prompt_check.h"
#include "golden/kinds.h"
#include "io/layout.h"
#include "models/text/embeddings_processor.h"
#include "models/text/gemma3.h"
#include "models/text/gemma4.h"
#include "models/text/prompt_encoder.h"
#include "models/text/tokenizer.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace ltx2::golden {

namespace {

// x [B, T, F] with the rows whose mask is 0 set to zero.
Tensor zero_pads(const Tensor& x, const Tensor& mask) {
  return ops::mul(x, mask.to(DType::F32).unsqueeze(-1));
}

// The rows of x [1, T, F] whose mask is 1, as [n, F].
Tensor valid_rows(const Tensor& x, const std::vector<int64_t>& mask) {
  std::vector<Tensor> rows;
  for (size_t t = 0; t < mask.size(); ++t)
    if (mask[t]) rows.push_back(x.select(0, 0).select(0, static_cast<int64_t>(t)).unsqueeze(0));
  return ops::cat(rows, 0);
}

void run_gemma4(const GoldenCase& c, Report& report) {
  const nlohmann::json& s = c.spec();
  const Tolerance tol = parse_tolerance(s.at("tolerance"));
  const std::string te = c.path(s.at("text_encoder_file").at("file").get<std::string>());
  const std::string connectors = c.path(s.at("transformer_file").at("file").get<std::string>());
  auto ltx = WeightSet::open({connectors, te});

  const Gemma3TextModel::Source source = Gemma3TextModel::locate(te);
  LTX2_CHECK(source.config.gemma4, "{}: the Gemma config is not gemma4_unified", te);
  const Gemma4TextModel model(source.config, source.view());
  const EmbeddingsProcessor processor(ltx);
  processor.feature_extractor().check_gemma(source.config, te);

  const Tensor ids = c.tensor("in.input_ids"), mask = c.tensor("in.attention_mask");
  const std::vector<Tensor> states = model.forward(ids, mask);
  std::vector<Tensor> zeroed, raw;
  for (const Tensor& h : states) {
    zeroed.push_back(zero_pads(h, mask).unsqueeze(0));
    raw.push_back(h.unsqueeze(0));
  }
  report.check("out.hidden_states", ops::cat(zeroed, 0), c.tensor("out.hidden_states"), tol);
  report.check("out.last_hidden_state", states.back(), c.tensor("out.last_hidden_state"), tol);
  if (c.has("mid.hidden_states_raw"))
    report.check("mid.hidden_states_raw", ops::cat(raw, 0), c.tensor("mid.hidden_states_raw"), tol);
  const TextFeatures features = processor.feature_extractor().forward(states, mask);
  report.check("out.features.video", zero_pads(features.video, mask), c.tensor("out.features.video"), tol);
  report.check("out.features.audio", zero_pads(features.audio, mask), c.tensor("out.features.audio"), tol);

  PromptEncoder encoder(te, ltx);
  for (const auto& [name, text] : s.at("prompts").items()) {
    const EncodedPrompt e = encoder.encode({text.get<std::string>()}).at(0);
    const std::string key = "out.text." + name;
    check_encoded_prompt(c, report, key, e, tol);
    const auto n = static_cast<int64_t>(e.tokens.ids.size());
    // The features the connectors were handed: the same tokens through the model and the extractor.
    const Tensor row_ids = Tensor::from_vector_i64(e.tokens.ids, {1, n});
    const Tensor row_mask = Tensor::from_vector_i64(e.tokens.mask, {1, n});
    const TextFeatures f = processor.feature_extractor().forward(model.forward(row_ids, row_mask), row_mask);
    report.check(key + ".video_features", valid_rows(f.video, e.tokens.mask),
                 c.tensor(key + ".video_features"), tol);
    report.check(key + ".audio_features", valid_rows(f.audio, e.tokens.mask),
                 c.tensor(key + ".audio_features"), tol);
  }
}

const bool registered = register_kind_runner("gemma4", &run_gemma4);

}  // namespace
}  // namespace ltx2::golden
