// Check runner for single-process tiled decode cases: builds the tile plan from the case's
// tiling_config, checks it against the recorded tiles (latent inputs, pixel outputs, blend masks)
// and chunk sizes when the case lists them, then compares the concatenated out.video.
#include <vector>

#include "core/error.h"
#include "golden/kinds.h"
#include "golden/traced_tensors.h"
#include "models/video_vae/tiled_decode.h"
#include "ops/shape.h"

namespace ltx2::golden {

namespace {

using nlohmann::json;

video_vae::AxisTiling axis_tiling(const json& j, const char* axis) {
  LTX2_CHECK(j.contains(axis), "tiling_config has no '{}'", axis);
  return video_vae::AxisTiling::by_size(j[axis].value("tile_size", int64_t{0}),
                                        j[axis].value("overlap", int64_t{0}));
}

Tensor as_tensor(const std::vector<float>& v) {
  return Tensor::from_vector(v, {int64_t(v.size())});
}

// The recorded plan: per tile, [start, end) in latent and pixel units (null end = full) and masks.
void check_plan(const GoldenCase& c, const video_vae::DecodeTilePlan& plan, Report& report) {
  const json& tiles = c.spec()["tiles"];
  if (tiles.size() != plan.tiles.size()) {
    report.fail("plan.tiles", "case has " + std::to_string(tiles.size()) + " tiles, plan has " +
                                  std::to_string(plan.tiles.size()));
    return;
  }
  const Tolerance exact{}, mask_tol{1e-6, 0, -2};  // masks are recorded to 6 decimals
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    std::vector<float> got, want;
    for (int a = 0; a < 3; ++a) {
      const tiling::Interval& in = plan.tiles[i].in[a];
      const tiling::Range& out = plan.tiles[i].out[a];
      const std::vector<float>& mask_got = plan.tiles[i].masks[a];
      const int64_t full = plan.video_shape[2 + a];
      const json& lat = tiles[i]["latent_in_FHW"][a];
      const json& px = tiles[i]["pixel_out_FHW"][a];
      got.insert(got.end(), {float(in.start), float(in.stop), float(out.start), float(out.stop)});
      want.insert(want.end(), {lat[0].get<float>(), lat[1].get<float>(), px[0].get<float>(),
                               px[1].is_null() ? float(full) : px[1].get<float>()});
      if (tiles[i].contains("masks_FHW")) {
        // An untiled axis is recorded as the scalar mask [1].
        std::vector<float> mask = tiles[i]["masks_FHW"][a].get<std::vector<float>>();
        if (mask.size() == 1) mask.assign(mask_got.size(), mask[0]);
        report.check(std::string("plan.tile_") + std::to_string(i) + ".mask_" + "FHW"[a], as_tensor(mask_got),
                     as_tensor(mask), mask_tol);
      }
    }
    report.check("plan.tile_" + std::to_string(i) + ".slices", as_tensor(got), as_tensor(want), exact);
  }
}

void run_video_vae_tiled_decode(const GoldenCase& c, Report& report) {
  const Tolerance tol = fp32_tolerance(c);
  const auto decoder = video_vae::VideoDecoder::from_weights(c.weights());
  const json& tc = c.spec()["tiling_config"];
  const video_vae::TileSizeConfig config{axis_tiling(tc, "frames"), axis_tiling(tc, "height"),
                                         axis_tiling(tc, "width")};
  const Tensor latent = c.tensor("in.latent");
  const video_vae::DecodeTilePlan plan = video_vae::plan_tiled_decode(decoder, latent.shape(), config);
  if (c.spec().contains("tiles")) check_plan(c, plan, report);
  std::vector<Tensor> chunks;
  video_vae::tiled_decode(decoder, latent, plan, [&](const Tensor& t) { chunks.push_back(t); });
  if (c.spec().contains("yielded_chunk_frames")) {
    std::vector<float> got, want;
    for (const Tensor& t : chunks) got.push_back(float(t.size(2)));
    for (const auto& n : c.spec()["yielded_chunk_frames"])
      if (n.get<int64_t>() > 0) want.push_back(n.get<float>());  // empty chunks are not handed out
    report.check("plan.chunk_frames", as_tensor(got), as_tensor(want), Tolerance{});
  }
  report.check("out.video", ops::cat(chunks, 2), c.tensor("out.video"), tol);
}

const bool registered = register_kind_runner("video_vae_tiled_decode", &run_video_vae_tiled_decode);

}  // namespace

}  // namespace ltx2::golden
