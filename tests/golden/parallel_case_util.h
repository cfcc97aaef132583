// Helpers shared by the multi-GPU check runners (kind_sp_*, kind_tdp_*, kind_vae_*, kind_sharded_*,
// kind_lora_tracker_sim): exact integer comparison (the generic float comparison would round
// large byte offsets), int64 tensors from host vectors, token sequences, and per-output tolerance
// lookup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "golden/compare.h"
#include "golden/golden_case.h"
#include "parallel/token_sequence.h"

namespace ltx2::golden {

// Compares integer tensors element by element without going through float.
void check_exact_i64(Report& report, const std::string& name, const Tensor& got, const Tensor& expected);

// Checks `got` against out.<name> when the case has it (integer outputs exactly, others with tol);
// a missing expected tensor is a failed row.
void check_output(const GoldenCase& c, Report& report, const std::string& name, const Tensor& got,
                  const Tolerance& tol);

Tensor i64_tensor(const std::vector<int64_t>& values, const Shape& shape);
Tensor f32_tensor(const std::vector<float>& values);

// The per-token fields <prefix>latent, timesteps, positions and, where the case has them,
// keyframes_mask and attention_mask.
parallel::TokenSequence read_token_sequence(const GoldenCase& c, const std::string& prefix);

// case.json "tolerance" as an object {key: tol}: the entry for `key`, else `fallback`.
Tolerance tolerance_for(const GoldenCase& c, const std::string& key, const Tolerance& fallback);

}  // namespace ltx2::golden
