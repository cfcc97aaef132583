// The one declaration of a generation request's fields and of the model paths' (io/fields.h): each
// one's JSON key, flag, help and single-value checks. The command line, the --jobs file and the
// wire format of a job (to_json / request_from_json, request.h) all read these lists; checks across
// fields are validate_request's and validate_model_paths'.
//
// The keys are the same for every pipeline (a job's JSON has every field); `kind` only decides which
// fields have a flag (the guidance and step fields are the guided pipelines', the per-stage LoRA
// strengths the HQ one's, the upsampler and the distilled LoRA those that refine) and the help.
#pragma once

#include "io/fields.h"
#include "pipeline/request.h"

namespace ltx2 {

fields::FieldList request_fields(GenerationRequest& r, PipelineKind kind);
fields::FieldList model_path_fields(ModelPaths& p, PipelineKind kind);

// The wire format: every field, read back in full (a missing or unknown key is an ltx2::Error
// naming it).
nlohmann::json to_json(const GenerationRequest& r);
GenerationRequest request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ModelPaths& p);
ModelPaths model_paths_from_json(const nlohmann::json& j);
// A guider's parameters under the reference's names (cfg_scale, stg_scale, rescale_scale,
// modality_scale, skip_step, stg_blocks), as the fixtures record them too.
GuidanceParams guidance_from_json(const nlohmann::json& j);

}  // namespace ltx2
