#include "common/jobs_file.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/fields.h"
#include "media/clip_writer.h"
#include "pipeline/request_fields.h"

namespace ltx2::cli {

using json = nlohmann::json;

std::vector<JobLine> read_jobs_file(const std::string& path, const GenerationRequest& defaults,
                                    PipelineKind kind, const ModelFacts& model) {
  std::ifstream in(path);
  LTX2_CHECK(in, "--jobs {}: cannot read the file", path);
  std::vector<JobLine> jobs;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    JobLine job;
    job.line = line;
    try {
      const json j = json::parse(text);
      LTX2_CHECK(j.is_object(), "a job must be a JSON object, got {}", j.type_name());
      job.request = defaults;
      fields::from_json(request_fields(job.request, kind), j, fields::JsonRead::Overlay);
      validate_request(job.request, kind, model);
    } catch (const json::exception& e) {
      // The parser's own words (nlohmann prefixes them with "[json.exception.parse_error.101] ").
      std::string why = e.what();
      if (const size_t end = why.find("] ");
          why.rfind("[json.exception.", 0) == 0 && end != std::string::npos)
        why = why.substr(end + 2);
      job.error = "not a JSON object: " + why;
    } catch (const std::exception& e) {
      job.error = e.what();
    }
    jobs.push_back(std::move(job));
  }
  LTX2_CHECK(!jobs.empty(), "--jobs {}: no jobs in the file", path);
  return jobs;
}

void refuse_shared_outputs(std::vector<JobLine>& jobs) {
  // Every file or folder a line puts in place (a .y4m's .wav, a sequence's folder included).
  std::map<std::filesystem::path, int> writer;  // output -> the line that writes it
  for (JobLine& job : jobs) {
    if (!job.error.empty()) continue;
    std::vector<std::filesystem::path> outputs;
    for (const std::string& path :
         media::clip_outputs(job.request.output_path, output_has_audio(job.request))) {
      std::error_code ec;
      std::filesystem::path out = std::filesystem::weakly_canonical(path, ec);
      if (ec) out = std::filesystem::absolute(path).lexically_normal();
      if (const auto it = writer.find(out); it != writer.end()) {
        job.error = fmt::format("output_path {}: line {} writes {} already", job.request.output_path,
                                it->second, path == job.request.output_path ? "it" : path);
        break;
      }
      outputs.push_back(out);
    }
    if (job.error.empty())
      for (const auto& out : outputs) writer.emplace(out, job.line);
  }
}

}  // namespace ltx2::cli
