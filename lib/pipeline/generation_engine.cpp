#include "pipeline/generation_engine.h"

#include "core/error.h"
#include "pipeline/distilled_pipeline.h"
#include "pipeline/hq_pipeline.h"
#include "pipeline/keyframe_pipeline.h"
#include "pipeline/one_stage_pipeline.h"
#include "pipeline/two_stage_pipeline.h"

namespace ltx2::pipeline {

void GenerationEngine::generate(const GenerationRequest& request, const PipelineCallbacks& callbacks) {
  validate_request(request, kind_, facts_);
  run(request, callbacks);
}

OutputFormat GenerationEngine::output_format(const GenerationRequest& request) const {
  return {request.frame_rate, facts_.vocoder_sample_rate};
}

namespace {

template <typename Pipeline>
class Loaded : public LoadedPipeline {
 public:
  Loaded(const ModelPaths& paths, PipelineOptions options) : pipeline_(paths, std::move(options)) {}
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks) override {
    pipeline_.run(request, callbacks);
  }

 private:
  Pipeline pipeline_;
};

class LocalEngine : public GenerationEngine {
 public:
  LocalEngine(PipelineKind kind, const ModelPaths& paths, PipelineOptions options)
      : GenerationEngine(kind, read_model_facts(paths)),
        pipeline_(load_pipeline(kind, paths, std::move(options))) {}

 private:
  void run(const GenerationRequest& request, const PipelineCallbacks& callbacks) override {
    pipeline_->run(request, callbacks);
  }

  std::unique_ptr<LoadedPipeline> pipeline_;
};

}  // namespace

std::unique_ptr<LoadedPipeline> load_pipeline(PipelineKind kind, const ModelPaths& paths,
                                              PipelineOptions options) {
  switch (kind) {
    case PipelineKind::Distilled:
      return std::make_unique<Loaded<DistilledPipeline>>(paths, std::move(options));
    case PipelineKind::TwoStage: return std::make_unique<Loaded<TwoStagePipeline>>(paths, std::move(options));
    case PipelineKind::OneStage: return std::make_unique<Loaded<OneStagePipeline>>(paths, std::move(options));
    case PipelineKind::Keyframes:
      return std::make_unique<Loaded<KeyframePipeline>>(paths, std::move(options));
    case PipelineKind::Hq: return std::make_unique<Loaded<HqPipeline>>(paths, std::move(options));
  }
  LTX2_FAIL("unknown pipeline kind {}", static_cast<int>(kind));
}

std::unique_ptr<GenerationEngine> make_local_engine(PipelineKind kind, const ModelPaths& paths,
                                                    PipelineOptions options) {
  // The paths are checked before their metadata is read, for the messages naming the flag.
  validate_model_paths(paths, kind);
  return std::make_unique<LocalEngine>(kind, paths, std::move(options));
}

}  // namespace ltx2::pipeline
