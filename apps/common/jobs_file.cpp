#include "common/jobs_file.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_value.h"
#include "media/clip_writer.h"

namespace ltx2::cli {

namespace {

using json = nlohmann::json;

std::string text(const json& j, const std::string& key) {
  LTX2_CHECK(j.is_string(), "field '{}': must be a string, got {}", key, j.type_name());
  return j.get<std::string>();
}

void overlay_guidance(const json& j, GuidanceParams& g, const std::string& key) {
  LTX2_CHECK(j.is_object(), "field '{}': must be an object", key);
  for (const auto& [k, v] : j.items()) {
    const std::string name = key + "." + k;
    if (k == "cfg_scale")
      g.cfg_scale = json_number(v, name);
    else if (k == "stg_scale")
      g.stg_scale = json_number(v, name);
    else if (k == "rescale_scale")
      g.rescale_scale = json_number(v, name);
    else if (k == "modality_scale")
      g.modality_scale = json_number(v, name);
    else if (k == "skip_step")
      g.skip_step = json_integer<int>(v, name);
    else if (k == "stg_blocks")
      g.stg_blocks = json_integers<int>(v, name);
    else
      LTX2_FAIL("unknown field '{}'", name);
  }
}

ImageCondition image_from(const json& j) {
  ImageCondition c;
  if (j.is_array()) {
    LTX2_CHECK(j.size() == 3 || j.size() == 4,
               "field 'images': each image is [PATH, FRAME, STRENGTH(, CRF)]");
    c.path = text(j[0], "images PATH");
    c.frame = json_integer<int>(j[1], "images FRAME");
    c.strength = json_number(j[2], "images STRENGTH");
    if (j.size() == 4) c.crf = json_integer<int>(j[3], "images CRF");
    return c;
  }
  LTX2_CHECK(j.is_object(), "field 'images': each image is an array or an object");
  for (const auto& [k, v] : j.items()) {
    if (k == "path")
      c.path = text(v, "images.path");
    else if (k == "frame")
      c.frame = json_integer<int>(v, "images.frame");
    else if (k == "strength")
      c.strength = json_number(v, "images.strength");
    else if (k == "crf")
      c.crf = json_integer<int>(v, "images.crf");
    else
      LTX2_FAIL("unknown field 'images.{}'", k);
  }
  return c;
}

GenerationRequest overlay(const json& j, GenerationRequest r) {
  LTX2_CHECK(j.is_object(), "a job must be a JSON object, got {}", j.type_name());
  for (const auto& [k, v] : j.items()) {
    if (k == "prompt")
      r.prompt = text(v, k);
    else if (k == "negative_prompt")
      r.negative_prompt = text(v, k);
    else if (k == "output_path")
      r.output_path = text(v, k);
    else if (k == "no_audio") {
      LTX2_CHECK(v.is_boolean(), "field 'no_audio': must be true or false, got {}", v.type_name());
      r.no_audio = v.get<bool>();
    } else if (k == "seed")
      r.seed = json_integer<int64_t>(v, k);
    else if (k == "height")
      r.height = json_integer<int>(v, k);
    else if (k == "width")
      r.width = json_integer<int>(v, k);
    else if (k == "num_frames")
      r.num_frames = json_integer<int>(v, k);
    else if (k == "frame_rate")
      r.frame_rate = json_number(v, k);
    else if (k == "num_inference_steps")
      r.num_inference_steps = json_integer<int>(v, k);
    else if (k == "video_guidance")
      overlay_guidance(v, r.video_guidance, k);
    else if (k == "audio_guidance")
      overlay_guidance(v, r.audio_guidance, k);
    else if (k == "images") {
      LTX2_CHECK(v.is_array(), "field 'images': must be an array");
      r.images.clear();
      for (const json& im : v) r.images.push_back(image_from(im));
    } else {
      LTX2_FAIL("unknown field '{}'", k);
    }
  }
  return r;
}

}  // namespace

std::vector<JobLine> read_jobs_file(const std::string& path, const GenerationRequest& defaults,
                                    PipelineKind kind) {
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
      job.request = overlay(j, defaults);
      validate_request(job.request, kind);
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
