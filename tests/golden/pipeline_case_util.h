// Shared by the check runners of the end-to-end pipeline cases (pipeline_distilled,
// pipeline_ti2vid, pipeline_one_stage, pipeline_keyframes, pipeline_hq): the request and model paths a case
// describes, a run's recorded outputs, and their stage-by-stage comparison with the case's out.* / mid.*
// tensors.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "golden/compare.h"
#include "golden/golden_case.h"
#include "pipeline/noise_source.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request.h"

namespace ltx2::golden {

// Request from case.json (prompt, negative_prompt, seed, size, frames (null: unset, predicted), fps, steps
// from the stage-1 sigma list, guidance, image_conditioning: one image, or a list under "images"; the lora
// section's strength_stage_1 / _2 when there); the output path is output.mp4 in the case.
GenerationRequest pipeline_case_request(const GoldenCase& c);
// The split layout case.json's "model_paths" names (transformer, text_encoder, video_vae, audio_vae,
// duration_head, spatial_upsampler; relative to the model folder), else the
// monolith layout of the case folder, or of the folder case.json's "models_from" names:
// checkpoint.safetensors, gemma/, spatial_upsampler.safetensors (when the case has a stage 2); in
// either layout, when case.json has a lora section, its file (relative to the model folder) and
// strength as the distilled LoRA.
ModelPaths pipeline_case_paths(const GoldenCase& c);
// in.noise.0, in.noise.1, ... in draw order.
pipeline::RecordedNoiseSource pipeline_case_noise(const GoldenCase& c);

// Everything a run reported: probes by name, the float frames (the "video" probes, in order) and
// the waveform.
class PipelineRecording {
 public:
  pipeline::PipelineCallbacks callbacks();
  // Compares every out.* (a missing one fails) and every mid.* the run produced, under the case's
  // fp32_impl tolerances (tokens and masks exactly).
  void compare(const GoldenCase& c, Report& report) const;

 private:
  std::map<std::string, Tensor> probes_;
  std::vector<Tensor> frames_;
  Tensor waveform_;
};

}  // namespace ltx2::golden
