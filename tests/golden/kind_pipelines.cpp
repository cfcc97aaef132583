// Check runners for the end-to-end pipeline cases ("pipeline_distilled", "pipeline_ti2vid",
// "pipeline_one_stage", "pipeline_keyframes", "pipeline_hq"): the pipeline loaded from the case's model files
// runs the case's request with the recorded noise draws; tokens, contexts, sigmas, latent states, every step,
// stage latents, the upsampled latent, the frames and the waveform are compared.
#include "golden/kinds.h"
#include "golden/pipeline_case_util.h"
#include "pipeline/pipeline.h"

namespace ltx2::golden {
namespace {

template <typename Pipeline>
void run_pipeline(const GoldenCase& c, Report& report) {
  Pipeline pipe(pipeline_case_paths(c));
  pipeline::RecordedNoiseSource noise = pipeline_case_noise(c);
  PipelineRecording recording;
  pipe.run(pipeline_case_request(c), recording.callbacks(), &noise);
  if (noise.used() != c.spec().at("noise_draws").size())
    report.fail("noise_draws", "not every recorded draw was used");
  recording.compare(c, report);
}

const bool registered_distilled =
    register_kind_runner("pipeline_distilled", &run_pipeline<pipeline::DistilledPipeline>);
const bool registered_ti2vid =
    register_kind_runner("pipeline_ti2vid", &run_pipeline<pipeline::TwoStagePipeline>);
const bool registered_one_stage =
    register_kind_runner("pipeline_one_stage", &run_pipeline<pipeline::OneStagePipeline>);
const bool registered_keyframes =
    register_kind_runner("pipeline_keyframes", &run_pipeline<pipeline::KeyframePipeline>);
const bool registered_hq = register_kind_runner("pipeline_hq", &run_pipeline<pipeline::HqPipeline>);

}  // namespace
}  // namespace ltx2::golden
