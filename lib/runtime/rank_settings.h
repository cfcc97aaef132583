// What every rank of a fleet needs to build its pipeline and its executors (fleet_engine.h's
// options carry it; the workers get it once, at setup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "io/quantization.h"
#include "pipeline/request.h"
#include "pipeline/residency.h"

namespace ltx2::runtime {

struct RankSettings {
  // Two-stage stage 2: "sp" (sequence parallel: the one-rank result) or "tdp" (the reference's
  // tiled data parallel, with its own sigmas and tiles: the result depends on the rank count).
  std::string stage2_parallel = "sp";
  // TDP tile counts per latent axis: 0 = the reference's balanced_tile_split(world) (height the
  // smaller factor, width the larger); frames untiled. Overlap in latent cells (reference: 5).
  int64_t tdp_height_tiles = 0, tdp_width_tiles = 0;
  int64_t tdp_overlap = 5;
  // The distributed decode's plan. Default: the pipeline's own (the single-process tiled decode's,
  // TileSizeConfig::automatic), its tiles spread round-robin over the ranks and blended by the
  // driver in plan order, so the frames are those of one rank whatever the rank count. Tile counts
  // > 0 (both) or vae_rank_split: the reference's plan instead, height x width tiles of the latent
  // grid, those counts or the reference's balanced_tile_split(world) (the frames then depend on the
  // rank count, as tiled decodes differ from whole ones); frames untiled; vae_overlap latent cells
  // (reference: 4); clamped per axis to what the grid allows.
  int64_t vae_height_tiles = 0, vae_width_tiles = 0;
  bool vae_rank_split = false;
  int64_t vae_overlap = 4;
  // The most bytes of one streamed piece of a decoded tile (at least one row); 1 KiB .. a quarter
  // of the result ring (ChannelSizes::ring_capacity).
  size_t tile_piece_bytes = 8 << 20;
  // GPU ranks plan what stays on their GPU for these requests (pipeline/residency.h); empty: every
  // model is kept. gpu_memory_gib > 0 caps each GPU's use.
  std::vector<pipeline::RequestShape> plan_shapes;
  double gpu_memory_gib = 0;
  Quantization quantization = Quantization::None;  // of every rank's transformer
};

// The setup every worker gets: the models and the settings.
struct RankSetup {
  ModelPaths paths;
  RankSettings settings;
};
// Its one JSON mapping.
nlohmann::json to_json(const RankSetup& setup);
RankSetup rank_setup_from_json(const nlohmann::json& j);

}  // namespace ltx2::runtime
