// The settings' fields and the setup's JSON mapping (see rank_settings.h).
#include "runtime/rank_settings.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_value.h"
#include "pipeline/latent_tools.h"
#include "pipeline/request_fields.h"
#include "tiling/axis_split.h"

namespace ltx2::runtime {

using fields::Field;
using nlohmann::json;

namespace {

// A field whose flag and JSON both take one text, read by `set` (which throws naming `flag`) and
// written by `get`.
Field text_form(std::string key, std::string flag, std::string help,
                std::function<void(const std::string&)> set, std::function<std::string()> get) {
  Field f;
  f.key = std::move(key);
  f.flags = {std::move(flag)};
  f.help = std::move(help);
  f.type_name = "TEXT";
  f.set_words = [set](const std::vector<std::string>& w) { set(w.at(0)); };
  f.set_json = [set](const json& j, const std::string& name) { set(fields::json_text(j, name)); };
  f.get_json = [get] { return json(get()); };
  return f;
}

// "HxW" -> {H, W}; "" -> {0, 0} (the default plan). `other` names what else the flag takes.
std::pair<int64_t, int64_t> parse_tiles(const std::string& text, const std::string& flag,
                                        const char* other = "") {
  if (text.empty()) return {0, 0};
  const auto x = text.find('x');
  int64_t h = 0, w = 0;
  try {
    size_t used_h = 0, used_w = 0;
    if (x != std::string::npos) {
      h = std::stoll(text.substr(0, x), &used_h);
      w = std::stoll(text.substr(x + 1), &used_w);
    }
    if (x == std::string::npos || used_h != x || used_w != text.size() - x - 1) h = w = 0;
  } catch (const std::exception&) {
    h = w = 0;
  }
  LTX2_CHECK(h >= 1 && w >= 1 && h <= 64 && w <= 64, "{} must be HxW with H, W in 1..64{}, got '{}'", flag,
             other, text);
  return {h, w};
}

std::string tiles_text(int64_t h, int64_t w) {
  return h > 0 ? fmt::format("{}x{}", h, w) : "";
}

// A latent-cell count >= 0.
Field overlap_field(std::string key, const std::string& flag, std::string help, int64_t& value) {
  return fields::checked(fields::integer(std::move(key), flag, std::move(help), value),
                         [&value, flag] { LTX2_CHECK(value >= 0, "{} must be >= 0, got {}", flag, value); });
}

}  // namespace

tiling::GridTiling tdp_tiling(const RankSettings& s, int world_size) {
  const auto [small, large] = tiling::balanced_tile_split(world_size);
  return {tiling::AxisTiling::by_count(1, 0),
          tiling::AxisTiling::by_count(s.tdp_height_tiles > 0 ? s.tdp_height_tiles : small, s.tdp_overlap),
          tiling::AxisTiling::by_count(s.tdp_width_tiles > 0 ? s.tdp_width_tiles : large, s.tdp_overlap)};
}

void check_tdp_tiling(const RankSettings& s, int world_size, const GenerationRequest& r) {
  if (s.stage2_parallel != Stage2Parallel::TiledData || world_size <= 1) return;
  // The frames are not tiled, so the longest video the request may have (--num-frames unset: before
  // the duration head predicts it) is cut as any shorter one.
  const auto grid = pipeline::video_latent_grid(max_num_frames(r), r.height, r.width);
  const tiling::GridTiling t = tdp_tiling(s, world_size);
  try {
    tiling::plan_tiles(grid, t, {});
  } catch (const Error& e) {
    LTX2_FAIL(
        "--tdp-tiles {}x{} --tdp-overlap {} on {} ranks: {}x{} pixels make a stage-2 latent grid of {}x{}, "
        "which cannot be cut so ({})",
        t[1].value, t[2].value, s.tdp_overlap, world_size, r.height, r.width, grid[1], grid[2], e.what());
  }
}

fields::FieldList rank_setting_fields(RankSettings& s, PipelineKind kind) {
  fields::FieldList out;
  out.push_back(text_form(
      "stage1_parallel", "--stage1-parallel",
      "Stage-1 strategy across ranks: auto (a step's guidance passes on different ranks, or on groups of "
      "ranks each sequence parallel within one node, when they divide evenly over them, else sequence "
      "parallel over all ranks) or sp (always sequence parallel); both give the one-device result",
      [&s](const std::string& v) {
        LTX2_CHECK(v == "auto" || v == "sp", "--stage1-parallel must be auto or sp, got '{}'", v);
        s.stage1_parallel = v == "sp" ? Stage1Parallel::Sequence : Stage1Parallel::Auto;
      },
      [&s] { return std::string(s.stage1_parallel == Stage1Parallel::Sequence ? "sp" : "auto"); }));
  out.back().default_text = "auto";
  // Guidance passes exist in the guided stage 1 only.
  if (!pipeline_traits(kind).guided) out.back() = fields::without_flag(std::move(out.back()));
  out.push_back(text_form(
      "stage2_parallel", "--stage2-parallel",
      "Stage-2 strategy across ranks: sp (sequence parallel, the one-device result) or tdp (the reference's "
      "tiled data parallel: its own sigmas and tiles, so the video depends on the rank count)",
      [&s](const std::string& v) {
        LTX2_CHECK(v == "sp" || v == "tdp", "--stage2-parallel must be sp or tdp, got '{}'", v);
        s.stage2_parallel = v == "tdp" ? Stage2Parallel::TiledData : Stage2Parallel::Sequence;
      },
      [&s] { return std::string(s.stage2_parallel == Stage2Parallel::TiledData ? "tdp" : "sp"); }));
  out.back().default_text = "sp";
  out.push_back(text_form(
      "tdp_tiles", "--tdp-tiles", "Stage-2 tiled data parallel tiles HxW (default: balanced split)",
      [&s](const std::string& v) {
        std::tie(s.tdp_height_tiles, s.tdp_width_tiles) = parse_tiles(v, "--tdp-tiles");
      },
      [&s] { return tiles_text(s.tdp_height_tiles, s.tdp_width_tiles); }));
  out.push_back(
      overlap_field("tdp_overlap", "--tdp-overlap", "Stage-2 tile overlap in latent cells", s.tdp_overlap));
  // Stage-2 tiled data parallel: the stage the distilled LoRA refines (the reference's ti2vid runner).
  if (!pipeline_traits(kind).distilled_lora)
    for (Field& f : out) f = fields::without_flag(std::move(f));
  out.push_back(text_form(
      "vae_tiles", "--vae-tiles",
      "Distributed VAE decode: HxW tiles, or 'ranks' for the reference's balanced split of the rank count "
      "(either makes the frames depend on the tiling; default: the one-device decode's tiles spread over the "
      "ranks, the same frames on any rank count)",
      [&s](const std::string& v) {
        s.vae_rank_split = v == "ranks";
        std::tie(s.vae_height_tiles, s.vae_width_tiles) = s.vae_rank_split
                                                              ? std::pair<int64_t, int64_t>{0, 0}
                                                              : parse_tiles(v, "--vae-tiles", ", or 'ranks'");
      },
      [&s] {
        return s.vae_rank_split ? std::string("ranks") : tiles_text(s.vae_height_tiles, s.vae_width_tiles);
      }));
  out.push_back(overlap_field("vae_overlap", "--vae-overlap",
                              "Distributed decode tile overlap in latent cells", s.vae_overlap));
  Field memory = fields::number(
      "gpu_memory_gib", "--gpu-memory",
      "GiB of each GPU the job may use, e.g. 80 to run as an 80 GiB card would (default: all of it). Models "
      "that do not fit beside the rest are loaded per phase; a job that cannot fit fails before loading, "
      "naming the phase",
      s.gpu_memory_gib);
  memory.default_text.clear();
  memory = fields::checked(std::move(memory), [&s] {
    LTX2_CHECK(s.gpu_memory_gib >= 0, "--gpu-memory must be >= 0 GiB, got {}", s.gpu_memory_gib);
  });
  out.push_back(std::move(memory));
  out.push_back(text_form(
      "quantization", "--quantization",
      "How the transformer's weights are held and multiplied: auto (fp8 for an FP8 checkpoint on a "
      "Hopper GPU, else none); none (the checkpoint's values, an FP8 "
      "checkpoint's scales honoured, in the compute dtype); fp8 (ours, the fastest accurate mode: the "
      "blocks' linears in FP8 with a scale per output channel, from an FP8 checkpoint's bytes or "
      "quantized at load from a bf16 one, and every token's activations quantized with its own scale "
      "on the fly, in the kernel that makes them where it can; cuBLASLt FP8 GEMMs on Hopper); and the "
      "reference's two: fp8-cast (its numbers: block linears rounded to FP8 at load, multiplied "
      "upcast) and fp8-scaled-mm (an FP8 checkpoint's linears multiplied in FP8 with its static input "
      "scales; FP8 checkpoints only)",
      [&s](const std::string& v) { s.quantization = parse_quantization(v); },
      [&s] { return std::string(quantization_name(s.quantization)); }));
  out.back().default_text = "auto";
  out.push_back(text_form(
      "attention_precision", "--attention-precision",
      "The arithmetic of the transformer's large attentions on a GPU: bf16 (bf16 operands, float32 "
      "softmax and accumulation) or 8bit (SageAttention2's: keys smoothed by their mean, INT8 Q·Kᵀ with "
      "a scale per query token and per 128 keys, FP8 P·V with a scale per value channel; faster, and "
      "close to bf16 but not equal: docs/performance.md gives its measured error). Applies to unmasked "
      "attention at head dim 128 (video self- and cross-attention); the CPU ignores it",
      [&s](const std::string& v) {
        s.attention_precision = ops::parse_attention_precision(v, "--attention-precision");
      },
      [&s] { return std::string(ops::attention_precision_name(s.attention_precision)); }));
  out.back().default_text = "bf16";
  Field piece;
  piece.key = "tile_piece_bytes";
  piece.set_json = [&s](const json& j, const std::string& name) {
    s.tile_piece_bytes = static_cast<size_t>(json_integer(j, name, 0, std::numeric_limits<int64_t>::max()));
  };
  piece.get_json = [&s] { return json(s.tile_piece_bytes); };
  out.push_back(std::move(piece));
  Field shapes;
  shapes.key = "plan_shapes";
  shapes.set_json = [&s](const json& j, const std::string&) {
    s.plan_shapes = pipeline::request_shapes_from_json(j);
  };
  shapes.get_json = [&s] { return pipeline::to_json(s.plan_shapes); };
  out.push_back(std::move(shapes));
  return out;
}

json to_json(const RankSetup& setup) {
  RankSetup copy = setup;
  json j = fields::to_json(rank_setting_fields(copy.settings, PipelineKind::TwoStage));
  j["paths"] = ltx2::to_json(setup.paths);
  return j;
}

RankSetup rank_setup_from_json(const json& j) {
  RankSetup setup;
  LTX2_CHECK(j.is_object() && j.contains("paths"), "malformed rank setup: no 'paths'");
  setup.paths = model_paths_from_json(j.at("paths"));
  json settings = j;
  settings.erase("paths");
  try {
    fields::from_json(rank_setting_fields(setup.settings, PipelineKind::TwoStage), settings,
                      fields::JsonRead::Complete);
  } catch (const Error& e) {
    LTX2_FAIL("malformed rank setup: {}", e.what());
  }
  return setup;
}

}  // namespace ltx2::runtime
