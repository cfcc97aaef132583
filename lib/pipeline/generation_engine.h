// The seam between the command-line programs and whatever runs a generation: in this process
// (make_local_engine, over a Pipeline) or on a fleet of worker processes
// (lib/runtime's fleet engine, with sequence parallel, tiled data parallel and distributed decode).
// An engine loads its models once and then runs requests one after another; both kinds give the
// same frames and waveform for the same request and seed.
#pragma once

#include <memory>

#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

// What an engine's output is, for the file it goes to: opened before the first frame arrives.
struct OutputFormat {
  double frame_rate = 0;
  int64_t audio_sample_rate = 0;  // the vocoder's
};

class GenerationEngine {
 public:
  virtual ~GenerationEngine() = default;
  // Validates the request against the pipeline and the models (validate_request; the one check:
  // the pipelines and the fleet's ranks run what passed it), then runs it, reporting through the
  // callbacks (progress, frame chunks in time order, the waveform at the end). Throws ltx2::Error.
  void generate(const GenerationRequest& request, const PipelineCallbacks& callbacks);
  OutputFormat output_format(const GenerationRequest& request) const;
  const ModelFacts& model_facts() const { return facts_; }

 protected:
  GenerationEngine(PipelineKind kind, ModelFacts facts) : kind_(kind), facts_(std::move(facts)) {}

 private:
  virtual void run(const GenerationRequest& request, const PipelineCallbacks& callbacks) = 0;

  PipelineKind kind_;
  ModelFacts facts_;
};

// Loads the models of `kind` from `paths` into this process.
std::unique_ptr<GenerationEngine> make_local_engine(PipelineKind kind, const ModelPaths& paths,
                                                    PipelineOptions options = {});

}  // namespace ltx2::pipeline
