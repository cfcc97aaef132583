// The setup's JSON mapping (see rank_settings.h).
#include "runtime/rank_settings.h"

#include <nlohmann/json.hpp>

namespace ltx2::runtime {

using nlohmann::json;

json to_json(const RankSetup& setup) {
  const RankSettings& r = setup.settings;
  return {{"paths", ltx2::to_json(setup.paths)},
          {"stage2_parallel", r.stage2_parallel},
          {"tdp_height_tiles", r.tdp_height_tiles},
          {"tdp_width_tiles", r.tdp_width_tiles},
          {"tdp_overlap", r.tdp_overlap},
          {"vae_height_tiles", r.vae_height_tiles},
          {"vae_width_tiles", r.vae_width_tiles},
          {"vae_rank_split", r.vae_rank_split},
          {"vae_overlap", r.vae_overlap},
          {"tile_piece_bytes", r.tile_piece_bytes},
          {"plan_shapes", pipeline::to_json(r.plan_shapes)},
          {"gpu_memory_gib", r.gpu_memory_gib},
          {"quantization", quantization_name(r.quantization)}};
}

RankSetup rank_setup_from_json(const json& j) {
  RankSetup setup;
  setup.paths = model_paths_from_json(j.at("paths"));
  RankSettings& r = setup.settings;
  r.stage2_parallel = j.at("stage2_parallel");
  r.tdp_height_tiles = j.at("tdp_height_tiles");
  r.tdp_width_tiles = j.at("tdp_width_tiles");
  r.tdp_overlap = j.at("tdp_overlap");
  r.vae_height_tiles = j.at("vae_height_tiles");
  r.vae_width_tiles = j.at("vae_width_tiles");
  r.vae_rank_split = j.at("vae_rank_split");
  r.vae_overlap = j.at("vae_overlap");
  r.tile_piece_bytes = j.at("tile_piece_bytes");
  r.plan_shapes = pipeline::request_shapes_from_json(j.at("plan_shapes"));
  r.gpu_memory_gib = j.at("gpu_memory_gib");
  r.quantization = parse_quantization(j.at("quantization"));
  return setup;
}

}  // namespace ltx2::runtime
