// The flags of the generation programs (which of them a program has follows its pipeline kind):
// the request's, the model paths' and the rank
// settings' fields as declared once (pipeline/request_fields.h, runtime/rank_settings.h), spelled
// as the reference's CLIs spell them, plus the programs' own (--device, --gpus, --ranks, --jobs,
// --log-format, --retries, --job-timeout).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/batch.h"
#include "io/fields.h"
#include "pipeline/request.h"
#include "runtime/rank_settings.h"

// Only declared: the files that build or read the flags include CLI11 themselves, so a file that
// needs only GenerationFlags does not compile CLI11's headers.
namespace CLI {
class App;
}

namespace ltx2::cli {

// The words a use of each declared field's flag got, by the flag's name: the command line is
// parsed first and the fields set from the words after (finish_generation_flags), so each field's
// own reader checks them, as it checks the --jobs file's and the wire's JSON.
using FlagWords = std::map<std::string, std::vector<std::vector<std::string>>>;

struct GenerationFlags {
  // The declared fields (pipeline/request_fields.h, runtime/rank_settings.h).
  GenerationRequest request;
  ModelPaths paths;
  runtime::RankSettings settings;  // the quantization, the memory cap and the fleet's plans
  // The programs' own.
  std::string jobs_file;
  std::string log_format = "text";
  std::string device = "auto";  // see EnginePlacement (engine_factory.h)
  std::string gpus;
  int ranks = 0;
  int retries = 0;
  std::string job_timeout;  // --job-timeout SECONDS as given ("": not given, the fleet's default)
  std::optional<std::chrono::milliseconds> job_time_limit;  // parsed by finish_generation_flags
  // A --jobs batch (batch.h): --shard K/N as given and parsed (or the Slurm array task's),
  // --skip-existing, --manifest FILE.
  std::string shard;
  std::optional<Shard> batch_shard;  // set by finish_generation_flags
  bool skip_existing = false;
  std::string manifest;
  // Shared so that CLI11's pointers into it stay good whatever copies the flags.
  std::shared_ptr<FlagWords> words = std::make_shared<FlagWords>();
};

// The request's size when no checkpoint is given (the embedded tiny model) and the flag was not.
inline constexpr int kTinyHeight = 128, kTinyWidth = 192, kTinyNumFrames = 9, kTinyInferenceSteps = 4;

// Declares the flags of the fields that have one; their uses' words go to `words`.
void add_field_flags(CLI::App& app, const fields::FieldList& fields, FlagWords& words);
// After parsing: sets each field whose flag was used from its words (throws ltx2::Error naming
// the flag on a malformed value).
void set_fields_from_flags(const fields::FieldList& fields, const FlagWords& words);

// Starts `f` with the pipeline's default request (default_request) and declares the flags.
void add_generation_flags(CLI::App& app, GenerationFlags& f, PipelineKind kind);
// After parsing: sets the declared fields from their flags' words and checks the programs' own
// flags; throws ltx2::Error naming the flag on a malformed value (a usage error).
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
