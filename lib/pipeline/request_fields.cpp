#include "pipeline/request_fields.h"

#include <limits>
#include <tuple>

#include "core/error.h"
#include "io/json_value.h"

namespace ltx2 {

using fields::Field;
using fields::FieldList;
using json = nlohmann::json;

namespace {

int int_from_text(const std::string& text, const std::string& what) {
  return static_cast<int>(fields::integer_from_text(text, what, std::numeric_limits<int>::min(),
                                                    std::numeric_limits<int>::max()));
}

// ---- images: --image PATH FRAME STRENGTH [CRF], or JSON [PATH, FRAME, STRENGTH(, CRF)] / objects --

ImageCondition image_from_words(const std::vector<std::string>& w) {
  ImageCondition c;
  c.path = w.at(0);
  const std::string what = "--image " + c.path;
  c.frame = int_from_text(w.at(1), what + " FRAME");
  c.strength = fields::number_from_text(w.at(2), what + " STRENGTH");
  if (w.size() > 3) c.crf = int_from_text(w[3], what + " CRF");
  return c;
}

ImageCondition image_from_json(const json& j, const std::string& name) {
  ImageCondition c;
  if (j.is_array()) {
    LTX2_CHECK(j.size() == 3 || j.size() == 4, "field '{}': each image is [PATH, FRAME, STRENGTH(, CRF)]",
               name);
    c.path = fields::json_text(j[0], name + " PATH");
    c.frame = json_integer<int>(j[1], name + " FRAME");
    c.strength = json_number(j[2], name + " STRENGTH");
    if (j.size() == 4) c.crf = json_integer<int>(j[3], name + " CRF");
    return c;
  }
  LTX2_CHECK(j.is_object(), "field '{}': each image is an array or an object", name);
  for (const auto& [k, v] : j.items()) {
    const std::string field = name + "." + k;
    if (k == "path")
      c.path = fields::json_text(v, field);
    else if (k == "frame")
      c.frame = json_integer<int>(v, field);
    else if (k == "strength")
      c.strength = json_number(v, field);
    else if (k == "crf")
      c.crf = json_integer<int>(v, field);
    else
      LTX2_FAIL("unknown field '{}'", field);
  }
  return c;
}

Field images_field(std::vector<ImageCondition>& images, bool as_keyframes) {
  return fields::repeated_group<ImageCondition>(
      "images", "--image",
      as_keyframes ? "A keyframe (PNG, JPEG or WebP) the video passes through at a pixel frame (repeatable: "
                     "the frames between keyframes are interpolated)"
                   : "Condition on an image (PNG, JPEG or WebP) at a pixel frame (repeatable)",
      "PATH FRAME STRENGTH [CRF]", 3, 4, images, image_from_words, image_from_json,
      [](const ImageCondition& im) {
        return json{{"path", im.path}, {"frame", im.frame}, {"strength", im.strength}, {"crf", im.crf}};
      });
}

// ---- LoRAs: PATH [STRENGTH], JSON {"path": ..., "strength": ...} -----------------------------

LoraFile lora_from_words(const std::vector<std::string>& w, const std::string& flag) {
  return {w.at(0), w.size() > 1 ? fields::number_from_text(w[1], flag + " " + w[0] + " STRENGTH") : 1.0};
}

LoraFile lora_from_json(const json& j, const std::string& name) {
  LTX2_CHECK(j.is_object() && j.size() == 2 && j.contains("path") && j.contains("strength"),
             "field '{}': a LoRA is {{\"path\": ..., \"strength\": ...}}", name);
  return {fields::json_text(j.at("path"), name + ".path"), json_number(j.at("strength"), name + ".strength")};
}

json lora_json(const LoraFile& l) {
  return {{"path", l.path}, {"strength", l.strength}};
}

Field lora_list_field(std::vector<LoraFile>& loras) {
  return fields::repeated_group<LoraFile>(
      "loras", "--lora", "Extra LoRA fused into the transformer (strength 1.0; repeatable)", "PATH [STRENGTH]", 1,
      2, loras, [](const std::vector<std::string>& w) { return lora_from_words(w, "--lora"); }, lora_from_json,
      lora_json);
}

Field distilled_lora_field(std::vector<LoraFile>& loras) {
  return fields::repeated_group<LoraFile>(
      "distilled_loras", "--distilled-lora",
      "LoRA fused into the refining stage (strength 1.0; repeatable, as the reference's); with no "
      "checkpoint: "
      "the tiny model's",
      "PATH [STRENGTH]", 1, 2, loras,
      [](const std::vector<std::string>& w) { return lora_from_words(w, "--distilled-lora"); },
      lora_from_json, lora_json);
}

// ---- guidance --------------------------------------------------------------------------------

// One modality's guider (flags --video-cfg-guidance-scale, ...; in a request, the JSON object
// "video_guidance"). The modality scale's flag says which way the other modality informs this one.
FieldList guidance_fields(GuidanceParams& g, const std::string& m) {
  FieldList out;
  const auto add = [&](Field f) { out.push_back(std::move(f)); };
  const std::string modality_flag = m == "video" ? "--a2v-guidance-scale" : "--v2a-guidance-scale";
  add(fields::number("cfg_scale", "--" + m + "-cfg-guidance-scale", "Classifier-free guidance scale for " + m,
                     g.cfg_scale));
  add(fields::number("stg_scale", "--" + m + "-stg-guidance-scale", "Spatio-temporal guidance scale for " + m,
                     g.stg_scale));
  add(fields::number("rescale_scale", "--" + m + "-rescale-scale", "Guidance rescale for " + m,
                     g.rescale_scale));
  Field blocks = fields::integers("stg_blocks", "--" + m + "-stg-blocks",
                                  "Transformer blocks whose self-attention STG skips, none for an empty list",
                                  g.stg_blocks);
  blocks.default_text =
      "by the checkpoint's version: 29 for LTX-2 (19B) and a checkpoint without one, 28 for LTX-2.3 and "
      "later";
  add(std::move(blocks));
  add(fields::number("modality_scale", modality_flag, "Modality (cross-attention) guidance scale for " + m,
                     g.modality_scale));
  add(fields::integer("skip_step", "--" + m + "-skip-step",
                      "Reuse the previous prediction on skipped steps (0: never)", g.skip_step));
  return out;
}

void add_guidance_fields(FieldList& out, GuidanceParams& g, const std::string& m) {
  for (Field& f : guidance_fields(g, m)) out.push_back(fields::in_group(m + "_guidance", std::move(f)));
}

// The STG blocks' default as --help says it: by the checkpoint's version, or the HQ parameters'.
void describe_stg_default(FieldList& out, PipelineKind kind) {
  if (pipeline_traits(kind).defaults_by_version) return;
  for (Field& f : out)
    if (f.key == "stg_blocks") f.default_text = "none (the reference's HQ parameters)";
}

}  // namespace

FieldList request_fields(GenerationRequest& r, PipelineKind kind) {
  FieldList out;
  out.push_back(fields::text("prompt", "--prompt",
                             "What the video shows and sounds like (required unless --jobs)", r.prompt));
  Field output = fields::text(
      "output_path", "--output-path",
      "Output, by its form: .mp4 (H.264 + AAC); .y4m (uncompressed video, the audio as the .wav of the same "
      "name beside it); .wav (the audio alone, 16-bit PCM stereo; no video is decoded); or a PNG sequence's "
      "frame pattern FOLDER/NAME%05d.png (%d or %0Nd: 8-bit RGB frames numbered from 0, the audio as "
      "FOLDER/audio.wav; the folder is the output, replacing only a folder holding nothing but such files). "
      "Written atomically; required unless --jobs",
      r.output_path);
  output.type_name = "PATH";
  out.push_back(std::move(output));
  out.push_back(fields::boolean_switch("no_audio", "--no-audio",
                                       "No audio track: an .mp4 without an audio stream, a .y4m or PNG "
                                       "sequence without its .wav (the audio is "
                                       "not decoded)",
                                       r.no_audio));
  out.push_back(fields::boolean_switch(
      "enhance_prompt", "--enhance-prompt",
      "Rewrite the prompt with Gemma 3 before encoding it, as the reference does, but decoding greedily (the "
      "same request gives the same video) with ltx2's own system text (see --enhance-system-prompt); up to 512 "
      "new tokens; the rewrite is logged. With --image, Gemma is shown the first image through its vision "
      "tower (the reference's image-to-video enhancement; needs Gemma 3's full checkpoint)",
      r.enhance_prompt));
  Field system_prompt = fields::text(
      "enhance_system_prompt", "--enhance-system-prompt",
      "A text file with the system prompt for --enhance-prompt (e.g. the reference's "
      "gemma3_t2v_system_prompt.txt); default: ltx2's own",
      r.enhance_system_prompt);
  system_prompt.type_name = "PATH";
  out.push_back(std::move(system_prompt));
  out.push_back(fields::integer("seed", "--seed", "Random seed", r.seed));
  const int multiple = pipeline_traits(kind).size_multiple;
  const std::string sizes = multiple == 64 ? " (multiple of 64)" : " (multiple of 32, at least 64)";
  out.push_back(fields::integer("height", "--height", "Height in pixels" + sizes, r.height));
  out.push_back(fields::integer("width", "--width", "Width in pixels" + sizes, r.width));
  // Unset (0 inside, null in JSON): the model's duration head predicts it; 0 given is a mistake like
  // any count that is not 8k+1.
  Field frames =
      fields::checked(fields::integer("num_frames", "--num-frames", "Frames (8k+1)", r.num_frames), [&r] {
        LTX2_CHECK(r.num_frames != kNumFramesFromDurationHead,
                   "--num-frames must be 8k+1 (1, 9, 17, ..., 121, ...), got {}", r.num_frames);
      });
  frames.set_json = [&r, set = frames.set_json](const json& j, const std::string& name) {
    if (j.is_null())
      r.num_frames = kNumFramesFromDurationHead;
    else
      set(j, name);
  };
  frames.get_json = [&r]() -> json {
    return r.num_frames == kNumFramesFromDurationHead ? json(nullptr) : json(r.num_frames);
  };
  frames.default_text =
      "predicted from the prompt by the model's duration head (LTX-2.5), 1 to 20 seconds; required for a "
      "model without one";
  out.push_back(std::move(frames));
  out.push_back(fields::number("frame_rate", "--frame-rate", "Frames per second", r.frame_rate));
  out.push_back(images_field(r.images, pipeline_traits(kind).images_as_keyframes));

  // The guided pipelines': the distilled one runs a fixed schedule without guidance.
  const size_t guided_from = out.size();
  out.push_back(fields::text("negative_prompt", "--negative-prompt",
                             "What to steer away from (default: the reference's list)", r.negative_prompt));
  Field steps = fields::integer("num_inference_steps", "--num-inference-steps", "Stage-1 denoising steps",
                                r.num_inference_steps);
  steps.default_text = !pipeline_traits(kind).defaults_by_version
                           ? "15 (the reference's HQ parameters)"
                           : "by the checkpoint's version: 40 for LTX-2 (19B) and a checkpoint without one, "
                             "30 for LTX-2.3 and later";
  out.push_back(std::move(steps));
  add_guidance_fields(out, r.video_guidance, "video");
  add_guidance_fields(out, r.audio_guidance, "audio");
  describe_stg_default(out, kind);
  out.push_back(fields::integer(
      "max_batch_size", "--max-batch-size",
      "Guidance passes per transformer call (a step runs up to 4: conditional, negative prompt, STG, "
      "modality): more per call use the GPU better at small sizes and take more memory",
      r.max_batch_size));
  if (!pipeline_traits(kind).guided)
    for (size_t i = guided_from; i < out.size(); ++i) out[i] = fields::without_flag(std::move(out[i]));
  // The HQ pipeline's: the distilled LoRA in both stages, at a strength per stage.
  for (auto [key, flag, help, value] :
       {std::tuple{"distilled_lora_strength_stage_1", "--distilled-lora-strength-stage-1",
                   "Strength of the distilled LoRA in stage 1 (the --distilled-lora file's own STRENGTH is "
                   "not used)",
                   &r.distilled_lora_strength_stage_1},
        std::tuple{"distilled_lora_strength_stage_2", "--distilled-lora-strength-stage-2",
                   "Strength of the distilled LoRA in stage 2", &r.distilled_lora_strength_stage_2}}) {
    Field f = fields::number(key, flag, help, *value);
    out.push_back(pipeline_traits(kind).lora_in_stage1 ? std::move(f) : fields::without_flag(std::move(f)));
  }
  return out;
}

FieldList model_path_fields(ModelPaths& p, PipelineKind kind) {
  FieldList out;
  const auto path = [&](const char* key, const char* flag, const char* help, std::string& value) {
    Field f = fields::text(key, flag, help, value);
    f.type_name = "PATH";
    out.push_back(std::move(f));
  };
  if (kind == PipelineKind::Distilled) {
    path("checkpoint", "--distilled-checkpoint-path",
         "Distilled monolith checkpoint (.safetensors); none: the embedded tiny model", p.checkpoint);
    out.back().flags.push_back("--checkpoint-path");
  } else {
    path("checkpoint", "--checkpoint-path",
         "Monolith checkpoint (.safetensors); none: the embedded tiny model", p.checkpoint);
  }
  Field distilled = distilled_lora_field(p.distilled_loras);
  out.push_back(pipeline_traits(kind).distilled_lora ? std::move(distilled)
                                                     : fields::without_flag(std::move(distilled)));
  path("gemma_root", "--gemma-root",
       "Gemma 3 folder (config.json, tokenizer.model or tokenizer.json, safetensors) or a text-encoder file "
       "holding Gemma; with no checkpoint: the tiny model's",
       p.gemma_root);
  path("transformer", "--transformer-path", "Split layout: transformer file", p.transformer);
  path("text_encoder", "--text-encoder-path",
       "Split layout: text-encoder file (the text projection; also Gemma with its tokenizer and config when it "
       "holds them, as the reference packs it: then no --gemma-root)",
       p.text_encoder);
  path("video_vae", "--video-vae-path", "Split layout (or with a monolith): video VAE file", p.video_vae);
  path("audio_vae", "--audio-vae-path", "Split layout: audio VAE + vocoder file", p.audio_vae);
  path("duration_head", "--duration-head-path",
       "Split layout: LTX-2.5's duration head file, which predicts --num-frames when it is not given (a "
       "monolith "
       "checkpoint holds its own)",
       p.duration_head);
  path("spatial_upsampler", "--spatial-upsampler-path",
       "Latent spatial upsampler (.safetensors); with no checkpoint: the tiny model's", p.spatial_upsampler);
  if (!pipeline_traits(kind).refines) out.back() = fields::without_flag(std::move(out.back()));
  out.push_back(lora_list_field(p.loras));
  return out;
}

namespace {

// The wire format of a struct declared by `fields_of`: every field, written and read back in full.
template <typename T>
json write_all(const T& value, FieldList (*fields_of)(T&, PipelineKind)) {
  T copy = value;
  return fields::to_json(fields_of(copy, PipelineKind::TwoStage));
}

template <typename T>
T read_all(const json& j, FieldList (*fields_of)(T&, PipelineKind), const char* what) {
  T value;
  try {
    fields::from_json(fields_of(value, PipelineKind::TwoStage), j, fields::JsonRead::Complete);
  } catch (const Error& e) {
    LTX2_FAIL("malformed {}: {}", what, e.what());
  }
  return value;
}

}  // namespace

json to_json(const GenerationRequest& r) {
  return write_all(r, request_fields);
}

GenerationRequest request_from_json(const json& j) {
  return read_all(j, request_fields, "generation request");
}

json to_json(const ModelPaths& p) {
  return write_all(p, model_path_fields);
}

ModelPaths model_paths_from_json(const json& j) {
  return read_all(j, model_path_fields, "model paths");
}

GuidanceParams guidance_from_json(const json& j) {
  GuidanceParams g;
  fields::from_json(guidance_fields(g, "video"), j, fields::JsonRead::Complete);
  return g;
}

}  // namespace ltx2
