// Check runner for "pipeline_distilled" cases: the DistilledPipeline loaded from the case folder runs the
// case's request with the recorded noise draws; tokens, contexts, sigmas, latent states, every
// step, stage latents, the upsampled latent, the frames and the waveform are compared.
#include "check/kinds.h"
#include "check/pipeline_case_util.h"
#include "pipeline/distilled_pipeline.h"

namespace ltx2::check {
namespace {

void run_pipeline_distilled(const GoldenCase& c, Report& report) {
  pipeline::DistilledPipeline pipe(pipeline_case_paths(c));
  pipeline::RecordedNoiseSource noise = pipeline_case_noise(c);
  PipelineRecording recording;
  pipe.run(pipeline_case_request(c), recording.callbacks(), &noise);
  if (noise.used() != c.spec().at("noise_draws").size())
    report.fail("noise_draws", "not every recorded draw was used");
  recording.compare(c, report);
}

const bool registered = register_kind_runner("pipeline_distilled", &run_pipeline_distilled);

}  // namespace
}  // namespace ltx2::check
