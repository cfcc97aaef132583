#include "pipeline/generation_engine.h"

#include "pipeline/pipeline.h"

namespace ltx2::pipeline {

void GenerationEngine::generate(const GenerationRequest& request, const PipelineCallbacks& callbacks) {
  validate_request(request, kind_, facts_);
  run(request, callbacks);
}

OutputFormat GenerationEngine::output_format(const GenerationRequest& request) const {
  return {request.frame_rate, facts_.vocoder_sample_rate};
}

namespace {

// The engine in this process: its pipeline runs what the engine's check passed.
class LocalEngine : public GenerationEngine {
 public:
  LocalEngine(PipelineKind kind, const ModelPaths& paths, PipelineOptions options)
      : GenerationEngine(kind, read_model_facts(paths)), pipeline_(kind, paths, std::move(options)) {}

 private:
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks) override {
    pipeline_.run(request, callbacks);
  }

  Pipeline pipeline_;
};

}  // namespace

std::unique_ptr<GenerationEngine> make_local_engine(PipelineKind kind, const ModelPaths& paths,
                                                    PipelineOptions options) {
  // The paths are checked before their metadata is read, for the messages naming the flag.
  validate_model_paths(paths, kind);
  return std::make_unique<LocalEngine>(kind, paths, std::move(options));
}

}  // namespace ltx2::pipeline
