#include "pipeline/generation_engine.h"

#include "pipeline/distilled_pipeline.h"
#include "pipeline/two_stage_pipeline.h"

namespace ltx2::pipeline {

namespace {

template <typename Pipeline>
class LocalEngine : public GenerationEngine {
 public:
  LocalEngine(const ModelPaths& paths, PipelineOptions options) : pipeline_(paths, std::move(options)) {}
  void generate(const GenerationRequest& request, const PipelineCallbacks& callbacks) override {
    pipeline_.run(request, callbacks);
  }

 private:
  Pipeline pipeline_;
};

}  // namespace

std::unique_ptr<GenerationEngine> make_local_engine(PipelineKind kind, const ModelPaths& paths,
                                                    PipelineOptions options) {
  if (kind == PipelineKind::Distilled)
    return std::make_unique<LocalEngine<DistilledPipeline>>(paths, std::move(options));
  return std::make_unique<LocalEngine<TwoStagePipeline>>(paths, std::move(options));
}

}  // namespace ltx2::pipeline
