// The one place the generation programs get an engine: in this process, or (with --ranks or
// --gpus) on a fleet of worker processes. Also reads what the MP4 stream needs to know before the
// run starts (the vocoder's output rate) from the model files.
#pragma once

#include <cstdint>
#include <memory>

#include "common/generation_cli.h"
#include "pipeline/generation_engine.h"

namespace ltx2::cli {

// Throws ltx2::Error (naming the flag) when the fleet flags (--ranks, --gpus, --*-tiles, ...) are
// malformed; called during validation, before any work.
void check_engine_available(const GenerationFlags& flags);

// Loads the models (paths already validated) into the engine the flags ask for.
std::unique_ptr<pipeline::GenerationEngine> make_engine(PipelineKind kind, const ModelPaths& paths,
                                                        const GenerationFlags& flags);

// What the programs need to know about the model before running it, from the metadata config of
// the checkpoint (monolith) or the transformer and audio VAE files (split layout).
struct ModelFacts {
  int64_t vocoder_sample_rate = 0;  // the MP4's audio stream is opened before the audio arrives
  int transformer_blocks = 0;       // 0: unknown; bounds --video-stg-blocks / --audio-stg-blocks
};
ModelFacts read_model_facts(const ModelPaths& paths);

// Throws ltx2::Error naming the flag when the request's STG blocks are not in the model.
void check_request_fits_model(const GenerationRequest& r, PipelineKind kind, const ModelFacts& facts);

}  // namespace ltx2::cli
