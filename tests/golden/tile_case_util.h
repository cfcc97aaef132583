// Reading the tiling of the multi-GPU tile cases (tdp_*, vae_*): per-axis (count, overlap) from
// case.json or from an in.*.counts_overlaps tensor, and the VAE scale factors stated in case.json
// "what".
#pragma once

#include <array>
#include <string>

#include "golden/golden_case.h"
#include "tiling/tile_plan.h"

namespace ltx2::golden {

// (time, height, width) pixel cells per latent cell.
using VaeScale = std::array<int64_t, 3>;

// j[key] = [n, o]: n tiles sharing o cells; absent: untiled.
tiling::AxisTiling axis_tiling_from_json(const nlohmann::json& j, const char* key);
// {"frames": [n, o], "height": [n, o], "width": [n, o]} (absent axes untiled).
tiling::GridTiling grid_tiling_from_json(const nlohmann::json& j);
// [n_f, o_f, n_h, o_h, n_w, o_w].
tiling::GridTiling grid_tiling_from_counts(const std::vector<int64_t>& co);
// "scale (8,4,4)" or "time 8, height 32, width 32" in the case's "what"; the LTX-2 video VAE's
// (8, 32, 32) when the text states none.
VaeScale vae_scale_from_case(const GoldenCase& c);

}  // namespace ltx2::golden
