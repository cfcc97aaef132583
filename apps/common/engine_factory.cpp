#include "common/engine_factory.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/configs/vocoder_config.h"
#include "io/weights.h"
#include "runtime/fleet_engine.h"
#include "runtime/launcher.h"

namespace ltx2::cli {

namespace {
bool wants_fleet(const GenerationFlags& flags) {
  return flags.ranks > 0 || !flags.gpus.empty();
}

// "HxW" -> {H, W}; "" -> {0, 0} (the fleet's default split).
std::pair<int64_t, int64_t> parse_tiles(const std::string& text, const char* flag) {
  if (text.empty()) return {0, 0};
  auto x = text.find('x');
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
  LTX2_CHECK(h >= 1 && w >= 1 && h <= 64 && w <= 64, "{} must be HxW with H, W in 1..64, got '{}'", flag, text);
  return {h, w};
}

runtime::FleetEngineOptions fleet_options(const GenerationFlags& flags) {
  runtime::FleetEngineOptions o;
  if (!flags.gpus.empty()) {
    o.gpus = runtime::parse_gpu_list(flags.gpus);
  } else {
    o.ranks = flags.ranks;
  }
  o.retries = flags.retries;
  o.stage2_parallel = flags.stage2_parallel;
  std::tie(o.tdp_height_tiles, o.tdp_width_tiles) = parse_tiles(flags.tdp_tiles, "--tdp-tiles");
  std::tie(o.vae_height_tiles, o.vae_width_tiles) = parse_tiles(flags.vae_tiles, "--vae-tiles");
  LTX2_CHECK(flags.tdp_overlap >= 0, "--tdp-overlap must be >= 0, got {}", flags.tdp_overlap);
  LTX2_CHECK(flags.vae_overlap >= 0, "--vae-overlap must be >= 0, got {}", flags.vae_overlap);
  o.tdp_overlap = flags.tdp_overlap;
  o.vae_overlap = flags.vae_overlap;
  return o;
}
}  // namespace

void check_engine_available(const GenerationFlags& flags) {
  if (wants_fleet(flags)) runtime::fleet_devices(fleet_options(flags));  // names the flag at fault
}

std::unique_ptr<pipeline::GenerationEngine> make_engine(PipelineKind kind, const ModelPaths& paths,
                                                        const GenerationFlags& flags) {
  if (wants_fleet(flags)) return runtime::make_fleet_engine(kind, paths, fleet_options(flags));
  return pipeline::make_local_engine(kind, paths);
}

ModelFacts read_model_facts(const ModelPaths& paths) {
  const auto weights = paths.split() ? WeightSet::open({paths.transformer, paths.audio_vae})
                                     : WeightSet::open({paths.checkpoint});
  const nlohmann::json& config = weights->config();
  const std::string file = paths.split() ? paths.transformer : paths.checkpoint;
  LTX2_CHECK(config.contains("vocoder") && config.contains("transformer"),
             "{}: metadata config needs 'transformer' and 'vocoder' sections", file);
  ModelFacts facts;
  facts.vocoder_sample_rate = parse_vocoder_config(config.at("vocoder")).output_sampling_rate();
  facts.transformer_blocks = config.at("transformer").value("num_layers", 0);
  return facts;
}

void check_request_fits_model(const GenerationRequest& r, PipelineKind kind, const ModelFacts& facts) {
  if (kind != PipelineKind::TwoStage || facts.transformer_blocks == 0) return;
  for (const auto& [flag, g] : {std::pair{"--video-stg-blocks", &r.video_guidance},
                                std::pair{"--audio-stg-blocks", &r.audio_guidance}})
    for (int b : g->stg_blocks)
      LTX2_CHECK(b < facts.transformer_blocks, "{}: block {} is not in the model, which has {} blocks", flag,
                 b, facts.transformer_blocks);
}

}  // namespace ltx2::cli
