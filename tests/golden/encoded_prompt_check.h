// Shared by the check runners whose cases record prompts encoded end to end (text_encoder_file,
// gemma4): one prompt's tokens and contexts against the case's out.text.<name>.* tensors.
#pragma once

#include <string>

#include "golden/compare.h"
#include "golden/golden_case.h"
#include "models/text/prompt_encoder.h"

namespace ltx2::golden {

// `key` is the case's prefix for the prompt ("out.text.<name>"): <key>.input_ids and
// <key>.attention_mask exactly, <key>.video_context and <key>.audio_context at `tol`.
void check_encoded_prompt(const GoldenCase& c, Report& report, const std::string& key, const EncodedPrompt& e,
                          const Tolerance& tol);

}  // namespace ltx2::golden
