// The seam between the command-line programs and whatever runs a generation: in this process
// (make_local_engine, over DistilledPipeline / TwoStagePipeline) or on a fleet of worker processes
// (lib/runtime's fleet engine, with sequence parallel, tiled data parallel and distributed decode).
// An engine loads its models once and then runs requests one after another; both kinds give the
// same frames and waveform for the same request and seed.
#pragma once

#include <memory>

#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

class GenerationEngine {
 public:
  virtual ~GenerationEngine() = default;
  // Validates the request (before any work), then runs it, reporting through the callbacks
  // (progress, frame chunks in time order, the waveform at the end). Throws ltx2::Error on failure.
  virtual void generate(const GenerationRequest& request, const PipelineCallbacks& callbacks) = 0;
};

// Loads the models of `kind` from `paths` into this process.
std::unique_ptr<GenerationEngine> make_local_engine(PipelineKind kind, const ModelPaths& paths,
                                                    PipelineOptions options = {});

}  // namespace ltx2::pipeline
