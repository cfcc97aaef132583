#include "common/engine_factory.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/configs/vocoder_config.h"
#include "io/weights.h"

namespace ltx2::cli {

namespace {
bool wants_fleet(const GenerationFlags& flags) {
  return flags.ranks > 0 || !flags.gpus.empty();
}
}  // namespace

void check_engine_available(const GenerationFlags& flags) {
  LTX2_CHECK(!wants_fleet(flags), "--ranks/--gpus: the fleet engine is not in this build");
}

std::unique_ptr<pipeline::GenerationEngine> make_engine(PipelineKind kind, const ModelPaths& paths,
                                                        const GenerationFlags& flags) {
  check_engine_available(flags);
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
