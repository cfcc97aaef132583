// The distributed decode's results on the wire (see decode_stream.h).
#include "runtime/decode_stream.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ltx2::runtime {

using nlohmann::json;

json pipeline_plan_json(const video_vae::DecodeTilePlan& plan) {
  json config = json::array();
  for (const tiling::AxisTiling& a : {plan.config.frames, plan.config.height, plan.config.width})
    config.push_back({a.value, a.overlap});
  return {{"plan", "tiles"},
          {"latent_shape", plan.latent_shape},
          {"out_channels", plan.video_shape[1]},
          {"config", config},
          {"factors", {plan.factors.time, plan.factors.height, plan.factors.width}}};
}

video_vae::DecodeTilePlan pipeline_plan_from_json(const json& j) {
  const auto axis = [&](size_t i) {
    return tiling::AxisTiling::by_size(j.at("config").at(i).at(0), j.at("config").at(i).at(1));
  };
  const json& f = j.at("factors");
  return video_vae::plan_tiled_decode(j.at("latent_shape").get<Shape>(), j.at("out_channels"),
                                      {axis(0), axis(1), axis(2)}, {f.at(0), f.at(1), f.at(2)});
}

json tile_plan_json(const tiling::TilePlan& plan) {
  json tiles = json::array();
  for (const tiling::Tile& t : plan.tiles) {
    json in = json::array(), out = json::array();
    for (int a = 0; a < 3; ++a) {
      in.push_back({t.in[a].start, t.in[a].stop, t.in[a].left_ramp, t.in[a].right_ramp});
      out.push_back({t.out[a].start, t.out[a].stop});
    }
    tiles.push_back({{"in", in}, {"out", out}, {"masks", t.masks}, {"temporal_group", t.temporal_group}});
  }
  return {{"in_extent", plan.in_extent},
          {"out_extent", plan.out_extent},
          {"temporal_groups", plan.temporal_groups},
          {"masks_complementary", plan.masks_complementary},
          {"tiles", tiles}};
}

tiling::TilePlan tile_plan_from_json(const json& j) {
  tiling::TilePlan plan;
  plan.in_extent = j.at("in_extent").get<tiling::GridExtent>();
  plan.out_extent = j.at("out_extent").get<tiling::GridExtent>();
  plan.temporal_groups = j.at("temporal_groups");
  plan.masks_complementary = j.at("masks_complementary");
  for (const json& jt : j.at("tiles")) {
    tiling::Tile t;
    for (size_t a = 0; a < 3; ++a) {
      const json& in = jt.at("in").at(a);
      t.in[a] = {in.at(0), in.at(1), in.at(2), in.at(3)};
      t.out[a] = {jt.at("out").at(a).at(0), jt.at("out").at(a).at(1)};
      t.masks[a] = jt.at("masks").at(a).get<std::vector<float>>();
      LTX2_CHECK(t.out[a].start >= 0 && t.out[a].stop <= plan.out_extent[a] &&
                     static_cast<int64_t>(t.masks[a].size()) == t.out[a].length(),
                 "decode plan: a tile's axis {} box [{}, {}) or its {} mask values do not fit the extent {}",
                 a, t.out[a].start, t.out[a].stop, t.masks[a].size(), plan.out_extent[a]);
    }
    t.temporal_group = jt.at("temporal_group");
    plan.tiles.push_back(std::move(t));
  }
  return plan;
}

void DecodeStream::diffusion_plan(const tiling::TilePlan& plan, const std::array<tiling::Range, 3>& content) {
  json box = json::array();
  for (const tiling::Range& r : content) box.push_back({r.start, r.stop});
  out_.output("video_plan",
              {{"plan", "diffusion_tiles"}, {"tile_plan", tile_plan_json(plan)}, {"content", box}});
}

void DecodeStream::whole_video(int64_t frames, int64_t height, int64_t width) {
  out_.output("video_plan", {{"plan", "frames"}, {"frames", frames}, {"height", height}, {"width", width}});
}

void DecodeStream::pipeline_plan(const video_vae::DecodeTilePlan& plan) {
  out_.output("video_plan", pipeline_plan_json(plan));
}

void DecodeStream::reference_plan(const tiling::GridExtent& grid, const std::array<int64_t, 3>& scale,
                                  const tiling::GridTiling& tiling) {
  json axes = json::array();
  for (const tiling::AxisTiling& a : tiling) axes.push_back({a.value, a.overlap});
  out_.output("video_plan", {{"plan", "grid"}, {"grid", grid}, {"scale", scale}, {"tiling", axes}});
}

// In pieces of at most piece_bytes_: whole frames, else bands of at least one row of one frame.
void DecodeStream::tile_frames(int64_t tile, int64_t tile_frames, int64_t first, const Tensor& pixels) {
  const int64_t frames = pixels.size(0), rows = pixels.size(1);
  if (frames == 0) return;
  const size_t row_bytes = pixels.nbytes() / static_cast<size_t>(frames * rows);
  const size_t frame_bytes = row_bytes * static_cast<size_t>(rows);
  const auto send = [&](int64_t frame, int64_t row, const Tensor& part) {
    out_.output("video_tile",
                {{"tile", tile}, {"frames", tile_frames}, {"frame_start", first + frame}, {"row_start", row}},
                {{"pixels", part}});
  };
  if (frame_bytes <= piece_bytes_) {
    const auto step = static_cast<int64_t>(piece_bytes_ / frame_bytes);
    for (int64_t start = 0; start < frames; start += step)
      send(start, 0, pixels.narrow(0, start, std::min(step, frames - start)));
    return;
  }
  const auto band = std::max<int64_t>(1, static_cast<int64_t>(piece_bytes_ / row_bytes));
  for (int64_t frame = 0; frame < frames; ++frame)
    for (int64_t row = 0; row < rows; row += band)
      send(frame, row, pixels.narrow(0, frame, 1).narrow(1, row, std::min(band, rows - row)));
}

}  // namespace ltx2::runtime
