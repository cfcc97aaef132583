// Check runner for "gemma3" cases: our Gemma 3 text decoder on the case's ids and mask, compared
// with every recorded hidden state (pad rows zeroed, as the fixture stores them), the last hidden
// state, and the tokenizer's BOS / truncate / left-pad rule on the case's recorded raw ids.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "golden/kinds.h"
#include "io/configs/gemma_config.h"
#include "io/layout.h"
#include "models/text/gemma3.h"
#include "models/text/tokenizer.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace ltx2::golden {

namespace {

// x [B, T, D] with the rows whose mask is 0 set to zero.
Tensor zero_pad_rows(const Tensor& x, const Tensor& mask) {
  Tensor m = mask.to(DType::F32).unsqueeze(-1);
  return ops::mul(x, m);
}

void check_tokenizer_probe(const GoldenCase& c, Report& report, const Tolerance& exact) {
  const nlohmann::json& probe = c.spec()["tokenizer_probe"];
  const nlohmann::json& vocab = probe["vocab"];
  int64_t max_length = probe["max_length"].get<int64_t>();
  for (const auto& [name, text] : probe["texts"].items()) {
    std::string ids_key = "out.tokenizer." + name + ".input_ids";
    if (!c.has(ids_key) || !probe.contains(name + ".hf_raw_ids")) continue;
    auto raw = probe[name + ".hf_raw_ids"].get<std::vector<int64_t>>();
    TokenizedPrompt t =
        format_prompt_ids(raw, vocab["<bos>"].get<int64_t>(), vocab["<pad>"].get<int64_t>(), max_length);
    int64_t n = static_cast<int64_t>(t.ids.size());
    report.check(ids_key, Tensor::from_vector_i64(t.ids, {n}).to(DType::F32),
                 c.tensor(ids_key).to(DType::F32), exact);
    std::string mask_key = "out.tokenizer." + name + ".attention_mask";
    report.check(mask_key, Tensor::from_vector_i64(t.mask, {n}).to(DType::F32),
                 c.tensor(mask_key).to(DType::F32), exact);
  }
}

void run_gemma3(const GoldenCase& c, Report& report) {
  Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  auto set = c.weights();
  const nlohmann::json& cfg =
      set->config().contains("text_config") ? set->config() : c.spec().at("config_json");
  GemmaConfig config = parse_gemma_config(cfg);
  Gemma3TextModel model(config,
                        WeightView(set, component_prefixes(Component::TextModel), "gemma text model"));

  Tensor ids = c.tensor("in.input_ids"), mask = c.tensor("in.attention_mask");
  std::vector<Tensor> states = model.forward(ids, mask);
  std::vector<Tensor> zeroed;
  for (const Tensor& s : states) zeroed.push_back(zero_pad_rows(s, mask).unsqueeze(0));
  report.check("out.hidden_states", ops::cat(zeroed, 0), c.tensor("out.hidden_states"), tol);
  report.check("out.last_hidden_state", states.back(), c.tensor("out.last_hidden_state"), tol);
  if (c.has("mid.hidden_states_raw")) {
    std::vector<Tensor> raw;
    for (const Tensor& s : states) raw.push_back(s.unsqueeze(0));
    report.check("mid.hidden_states_raw", ops::cat(raw, 0), c.tensor("mid.hidden_states_raw"), tol);
  }
  if (c.has("mid.embeddings_scaled"))
    report.check("mid.embeddings_scaled", states.front(), c.tensor("mid.embeddings_scaled"), tol);
  if (c.spec().contains("tokenizer_probe")) check_tokenizer_probe(c, report, Tolerance{});
}

}  // namespace

static const bool registered = register_kind_runner("gemma3", &run_gemma3);

}  // namespace ltx2::golden
