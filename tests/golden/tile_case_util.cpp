// Tiling and scale parsing for the tdp_* and vae_* check runners.
#include "golden/tile_case_util.h"

#include <regex>

#include "core/error.h"

namespace ltx2::golden {

tiling::AxisTiling axis_tiling_from_json(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return {};
  auto v = j.at(key).get<std::vector<int64_t>>();
  LTX2_CHECK(v.size() == 2, "tiling '{}' must be [num_tiles, overlap]", key);
  return tiling::AxisTiling::by_count(v[0], v[1]);
}

tiling::GridTiling grid_tiling_from_json(const nlohmann::json& j) {
  return {axis_tiling_from_json(j, "frames"), axis_tiling_from_json(j, "height"),
          axis_tiling_from_json(j, "width")};
}

tiling::GridTiling grid_tiling_from_counts(const std::vector<int64_t>& co) {
  LTX2_CHECK(co.size() == 6, "counts_overlaps must hold 6 values (n, overlap per axis), got {}", co.size());
  return {tiling::AxisTiling::by_count(co[0], co[1]), tiling::AxisTiling::by_count(co[2], co[3]),
          tiling::AxisTiling::by_count(co[4], co[5])};
}

VaeScale vae_scale_from_case(const GoldenCase& c) {
  const std::string what = c.spec().value("what", "");
  std::smatch m;
  static const std::regex tuple(R"(scale \((\d+),\s*(\d+),\s*(\d+)\))");
  static const std::regex named(R"(time (\d+), height (\d+), width (\d+))");
  if (std::regex_search(what, m, tuple) || std::regex_search(what, m, named))
    return {std::stoll(m[1]), std::stoll(m[2]), std::stoll(m[3])};
  return {8, 32, 32};
}

}  // namespace ltx2::golden
