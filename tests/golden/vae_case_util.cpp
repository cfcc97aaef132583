// Tiling and scale parsing for the vae_* check runners.
#include "golden/vae_case_util.h"

#include <regex>

#include "core/error.h"

namespace ltx2::golden {

parallel::GridTiling grid_tiling_from_json(const nlohmann::json& j) {
  parallel::GridTiling t{};
  const char* axes[3] = {"frames", "height", "width"};
  for (int a = 0; a < 3; ++a) {
    if (!j.contains(axes[a])) continue;
    auto v = j.at(axes[a]).get<std::vector<int64_t>>();
    LTX2_CHECK(v.size() == 2, "tiling '{}' must be [num_tiles, overlap]", axes[a]);
    t[a] = {v[0], v[1]};
  }
  return t;
}

parallel::GridTiling grid_tiling_from_counts(const std::vector<int64_t>& co) {
  LTX2_CHECK(co.size() == 6, "counts_overlaps must hold 6 values (n, overlap per axis), got {}", co.size());
  return {parallel::AxisTiling{co[0], co[1]}, parallel::AxisTiling{co[2], co[3]},
          parallel::AxisTiling{co[4], co[5]}};
}

parallel::VaeScale vae_scale_from_case(const GoldenCase& c) {
  const std::string what = c.spec().value("what", "");
  std::smatch m;
  static const std::regex tuple(R"(scale \((\d+),\s*(\d+),\s*(\d+)\))");
  static const std::regex named(R"(time (\d+), height (\d+), width (\d+))");
  if (std::regex_search(what, m, tuple) || std::regex_search(what, m, named))
    return {std::stoll(m[1]), std::stoll(m[2]), std::stoll(m[3])};
  return {};
}

}  // namespace ltx2::golden
