// What every rank of a fleet needs to build its pipeline and its executors (fleet_engine.h's
// options carry it; the workers get it once, at setup), and the in-process engine's quantization,
// attention precision and memory cap. Its fields are declared once (rank_setting_fields): the command line's
// flags and the setup's JSON are both made from that list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "io/fields.h"
#include "io/quantization.h"
#include "ops/attention.h"
#include "pipeline/request.h"
#include "pipeline/residency.h"
#include "tiling/tile_plan.h"

namespace ltx2::runtime {

// How the stage 2 of the pipelines with a distilled-LoRA stage 2 (ti2vid, HQ, keyframes) spreads
// over the ranks: sequence parallel ("sp": the one-rank result) or the reference's tiled data
// parallel ("tdp", with its own sigmas and tiles: the result depends on the rank count).
enum class Stage2Parallel { Sequence, TiledData };
// How the guided stage 1 (ti2vid, one-stage, HQ, keyframes) spreads over the ranks: "auto" runs a
// step's guidance passes on different ranks when they divide evenly over them, else sequence
// parallel (parallel/guidance_parallel.h); "sp" always sequence parallel. Both give the one-rank
// result.
enum class Stage1Parallel { Auto, Sequence };

struct RankSettings {
  Stage1Parallel stage1_parallel = Stage1Parallel::Auto;
  Stage2Parallel stage2_parallel = Stage2Parallel::Sequence;
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
  Quantization quantization = Quantization::Auto;  // of every rank's transformer
  // Of every rank's large attentions (ops/attention.h); each process sets it before its engine runs.
  ops::AttentionPrecision attention_precision = ops::AttentionPrecision::Bf16;
};

// The stage-2 tiled-data-parallel tiling of a fleet of `world_size` ranks: frames untiled, the
// asked tile counts or balanced_tile_split(world_size), the overlap.
tiling::GridTiling tdp_tiling(const RankSettings& s, int world_size);
// Throws, naming --tdp-tiles and --tdp-overlap, when stage 2 runs tiled data parallel on more than
// one rank and the request's stage-2 latent grid cannot be cut into that tiling (tiles no longer
// than their overlap, more tiles than cells): before any work, not after stage 1.
void check_tdp_tiling(const RankSettings& s, int world_size, const GenerationRequest& r);

// The fields (io/fields.h): flags --stage1-parallel (the guided pipelines), --stage2-parallel and
// --tdp-tiles/--tdp-overlap (the pipelines whose stage 2 the distilled LoRA refines), --vae-tiles,
// --vae-overlap, --gpu-memory, --quantization,
// --attention-precision;
// tile_piece_bytes and plan_shapes only travel in the setup. Tiles are "HxW" in flags and JSON alike ("" the
// default;
// --vae-tiles also takes "ranks": vae_rank_split).
fields::FieldList rank_setting_fields(RankSettings& s, PipelineKind kind);

// The setup every worker gets: the models and the settings.
struct RankSetup {
  ModelPaths paths;
  RankSettings settings;
};
// Its one JSON mapping.
nlohmann::json to_json(const RankSetup& setup);
RankSetup rank_setup_from_json(const nlohmann::json& j);

}  // namespace ltx2::runtime
