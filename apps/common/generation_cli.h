// The flags shared by ltx2-distilled and ltx2-ti2vid, spelled as the reference's CLIs spell them
// (plus ours: --device, --gpus, --ranks, --jobs, --log-format, --retries, --job-timeout), and their
// conversion into a GenerationRequest and ModelPaths.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "io/quantization.h"
#include "pipeline/request.h"

// Only declared: the files that build or read the flags include CLI11 themselves, so a file that
// needs only GenerationFlags does not compile CLI11's headers.
namespace CLI {
class App;
}

namespace ltx2::cli {

struct GenerationFlags {
  GenerationRequest request;
  ModelPaths paths;
  std::vector<std::vector<std::string>> images;  // PATH FRAME STRENGTH [CRF]
  std::vector<std::vector<std::string>> loras;   // PATH [STRENGTH]
  std::vector<std::string> distilled_lora;       // PATH [STRENGTH]
  std::string jobs_file;
  std::string log_format = "text";
  std::string device = "auto";  // see EnginePlacement (engine_factory.h)
  std::string gpus;
  double gpu_memory = 0;  // GiB of each GPU to use (0: all of it)
  std::string quantization = "none";                      // --quantization, as the reference spells it
  Quantization quantization_policy = Quantization::None;  // parsed by finish_generation_flags
  int ranks = 0;
  int retries = 0;
  std::string job_timeout;  // --job-timeout SECONDS as given ("": not given, the fleet's default)
  std::optional<std::chrono::milliseconds> job_time_limit;  // parsed by finish_generation_flags
  std::string stage2_parallel = "sp";
  // Fleet tile counts "HxW" and overlaps in latent cells, for stage-2 tiled data parallel ("": the
  // reference's balanced split of the world) and the distributed VAE decode ("": the pipeline's own
  // tiles spread over the ranks; "ranks": the reference's balanced split).
  std::string tdp_tiles, vae_tiles;
  int tdp_overlap = 5, vae_overlap = 4;
};

// The request's size when no checkpoint is given (the embedded tiny model) and the flag was not.
inline constexpr int kTinyHeight = 128, kTinyWidth = 192, kTinyNumFrames = 9, kTinyInferenceSteps = 4;

void add_generation_flags(CLI::App& app, GenerationFlags& f, PipelineKind kind);
// Parses the grouped flags (--image, --lora, --distilled-lora) into request/paths; throws
// ltx2::Error naming the flag on a malformed value.
void finish_generation_flags(GenerationFlags& f, PipelineKind kind);
// No checkpoint given (neither a monolith nor split files): the embedded tiny model is used.
bool wants_tiny_model(const ModelPaths& p);
// The tiny model's sizes (and two-stage steps and STG blocks) for the flags the user did not give.
void apply_tiny_model_defaults(const CLI::App& app, GenerationRequest& r, PipelineKind kind);
// The two-stage steps and STG blocks of the checkpoint's version (version_defaults) for the flags the
// user did not give.
void apply_model_version_defaults(const CLI::App& app, GenerationRequest& r, PipelineKind kind,
                                  const std::vector<int>& model_version);

}  // namespace ltx2::cli
