// Check runner for "text_encoder_file" cases: the reference's packed single-file text encoder
// (Gemma, its tokenizer.json as tensor tokenizer_json, the text projection; case.json
// "text_encoder_file") encoding the case's prompts in the split layout, as --text-encoder-path with
// no --gemma-root runs it: tokens compared exactly, the video and audio contexts at the case's
// tolerance. The split layout's transformer file is the model set's checkpoint without the tensors
// the text-encoder file holds, written to a scratch folder for the run.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "golden/encoded_prompt_check.h"
#include "golden/kinds.h"
#include "io/safetensors.h"
#include "models/text/prompt_encoder.h"
#include "pipeline/request.h"

namespace ltx2::golden {
namespace {

namespace fs = std::filesystem;

struct ScratchFolder {
  fs::path path = fs::temp_directory_path() / fmt::format("ltx2-golden-text-encoder-{}", getpid());
  ScratchFolder() { fs::create_directories(path); }
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

void run_text_encoder_file(const GoldenCase& c, Report& report) {
  const nlohmann::json& s = c.spec();
  const Tolerance tol = parse_tolerance(s.at("tolerance").at("fp32_impl"));
  ModelPaths paths;
  paths.text_encoder = c.path(s.at("text_encoder_file").at("file").get<std::string>());
  const std::string checkpoint =
      c.path("../" + s.at("models_from").get<std::string>() + "/checkpoint.safetensors");

  ScratchFolder scratch;
  paths.transformer = (scratch.path / "transformer.safetensors").string();
  auto te = SafetensorsFile::open(paths.text_encoder);
  auto ckpt = SafetensorsFile::open(checkpoint);
  std::vector<std::pair<std::string, Tensor>> rest;
  for (const TensorInfo& t : ckpt->tensors())
    if (!te->contains(t.name)) rest.emplace_back(t.name, ckpt->tensor(t.name));
  write_safetensors(paths.transformer, rest, ckpt->metadata());

  PromptEncoder encoder(paths.gemma_source(), WeightSet::open({paths.transformer, paths.text_encoder}));
  for (const auto& [name, text] : s.at("prompts").items()) {
    const EncodedPrompt e = encoder.encode({text.get<std::string>()}).at(0);
    check_encoded_prompt(c, report, "out.text." + name, e, tol);
  }
}

const bool registered = register_kind_runner("text_encoder_file", &run_text_encoder_file);

}  // namespace
}  // namespace ltx2::golden
