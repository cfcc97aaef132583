// Pipeline case helpers (see pipeline_case_util.h).
#include "golden/pipeline_case_util.h"

#include "core/error.h"
#include "ops/shape.h"
#include "pipeline/request_fields.h"

namespace ltx2::golden {

namespace {

bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

GenerationRequest pipeline_case_request(const GoldenCase& c) {
  const nlohmann::json& s = c.spec();
  GenerationRequest r;
  r.prompt = s.at("prompt").get<std::string>();
  if (s.contains("negative_prompt") && s.at("negative_prompt").is_string())
    r.negative_prompt = s.at("negative_prompt").get<std::string>();
  r.seed = s.at("seed").get<int64_t>();
  r.height = s.at("height").get<int>();
  r.width = s.at("width").get<int>();
  // null: --num-frames unset, the model's duration head predicts it.
  r.num_frames = s.at("num_frames").is_null() ? kNumFramesFromDurationHead : s.at("num_frames").get<int>();
  r.frame_rate = s.at("frame_rate").get<double>();
  r.num_inference_steps = static_cast<int>(s.at("stages").at("stage1").at("sigmas").size()) - 1;
  if (s.contains("guidance") && s.at("guidance").is_object()) {
    r.video_guidance = guidance_from_json(s.at("guidance").at("video_guider_params"));
    r.audio_guidance = guidance_from_json(s.at("guidance").at("audio_guider_params"));
  }
  // One image (the earlier cases' form) or a list of them under "images".
  if (s.contains("image_conditioning") && s.at("image_conditioning").is_object()) {
    const nlohmann::json& im = s.at("image_conditioning");
    for (const nlohmann::json& i : im.contains("images") ? im.at("images") : nlohmann::json::array({im}))
      r.images.push_back({c.path(i.at("file").get<std::string>()), i.at("frame_idx").get<int>(),
                          i.at("strength").get<double>(), i.at("crf").get<int>()});
  }
  // The HQ pipeline's distilled LoRA strengths per stage.
  if (s.contains("lora") && s.at("lora").contains("strength_stage_1")) {
    r.distilled_lora_strength_stage_1 = s.at("lora").at("strength_stage_1").get<double>();
    r.distilled_lora_strength_stage_2 = s.at("lora").at("strength_stage_2").get<double>();
  }
  r.output_path = c.path("output.mp4");
  return r;
}

ModelPaths pipeline_case_paths(const GoldenCase& c) {
  const nlohmann::json& s = c.spec();
  // A case may run another case's model set ("models_from": that case's folder, a sibling).
  const auto model_file = [&](const std::string& name) {
    return s.contains("models_from") ? c.path("../" + s.at("models_from").get<std::string>() + "/" + name)
                                     : c.path(name);
  };
  ModelPaths p;
  // The distilled LoRA (either layout): its file and strength.
  if (s.contains("lora") && s.at("lora").is_object())
    p.distilled_loras = {
        {model_file(s.at("lora").at("file").get<std::string>()), s.at("lora").at("strength").get<double>()}};
  if (s.contains("model_paths")) {
    // A split layout: each file named relative to the model folder (it may name other cases' files).
    const nlohmann::json& m = s.at("model_paths");
    const auto file = [&](const char* key) {
      return m.contains(key) ? model_file(m.at(key).get<std::string>()) : "";
    };
    p.transformer = file("transformer");
    p.text_encoder = file("text_encoder");
    p.video_vae = file("video_vae");
    p.audio_vae = file("audio_vae");
    p.duration_head = file("duration_head");
    p.spatial_upsampler = file("spatial_upsampler");
    return p;
  }
  p.checkpoint = model_file("checkpoint.safetensors");
  p.gemma_root = model_file("gemma");
  if (s.contains("stages") && s.at("stages").contains("stage2"))
    p.spatial_upsampler = model_file("spatial_upsampler.safetensors");
  return p;
}

pipeline::RecordedNoiseSource pipeline_case_noise(const GoldenCase& c) {
  std::vector<Tensor> draws;
  for (const auto& d : c.spec().at("noise_draws")) draws.push_back(c.tensor(d.at("key").get<std::string>()));
  return pipeline::RecordedNoiseSource(std::move(draws));
}

pipeline::PipelineCallbacks PipelineRecording::callbacks() {
  pipeline::PipelineCallbacks cb;
  // The float frames (probe "video", once per decoded chunk) are what out.video holds; video_chunk's
  // 8-bit frames are for files.
  cb.probe = [this](const std::string& name, const Tensor& t) {
    if (name == "video")
      frames_.push_back(t.clone());
    else
      probes_[name] = t.clone();
  };
  cb.audio = [this](const Tensor& wave, int64_t) { waveform_ = wave; };
  return cb;
}

void PipelineRecording::compare(const GoldenCase& c, Report& report) const {
  const nlohmann::json& tol = c.spec().at("tolerance").at("fp32_impl");
  const Tolerance text = parse_tolerance(tol.at("text_context")),
                  latents = parse_tolerance(tol.at("latents"));
  const Tolerance video = parse_tolerance(tol.at("video")), audio = parse_tolerance(tol.at("audio"));
  const Tolerance exact;
  auto tolerance_for = [&](const std::string& name) {
    if (ends_with(name, "input_ids") || ends_with(name, "attention_mask") || ends_with(name, "context_mask"))
      return exact;
    if (ends_with(name, "_context")) return text;
    if (name == "out.video") return video;
    if (name == "out.audio" || name == "mid.audio.mel") return audio;
    return latents;
  };
  for (const std::string& name : c.names("out.")) {
    Tensor got;
    if (name == "out.video") {
      if (!frames_.empty()) got = ops::cat(frames_, 0);
    } else if (name == "out.audio") {
      got = waveform_;
    } else if (auto it = probes_.find(name.substr(4)); it != probes_.end()) {
      got = it->second;
    }
    if (!got.defined()) {
      report.fail(name, "the pipeline produced no such output");
      continue;
    }
    report.check(name, got, c.tensor(name), tolerance_for(name));
  }
  for (const std::string& name : c.names("mid.")) {
    auto it = probes_.find(name.substr(4));
    if (it != probes_.end()) report.check(name, it->second, c.tensor(name), tolerance_for(name));
  }
}

}  // namespace ltx2::golden
