#include "golden/encoded_prompt_check.h"

namespace ltx2::golden {

void check_encoded_prompt(const GoldenCase& c, Report& report, const std::string& key, const EncodedPrompt& e,
                          const Tolerance& tol) {
  const Tolerance exact = parse_tolerance("exact");
  const auto n = static_cast<int64_t>(e.tokens.ids.size());
  report.check(key + ".input_ids", Tensor::from_vector_i64(e.tokens.ids, {n}).to(DType::F32),
               c.tensor(key + ".input_ids").to(DType::F32), exact);
  report.check(key + ".attention_mask", Tensor::from_vector_i64(e.tokens.mask, {n}).to(DType::F32),
               c.tensor(key + ".attention_mask").to(DType::F32), exact);
  report.check(key + ".video_context", e.video_context, c.tensor(key + ".video_context"), tol);
  report.check(key + ".audio_context", e.audio_context, c.tensor(key + ".audio_context"), tol);
}

}  // namespace ltx2::golden
