// The request's and the model paths' fields, declared once (pipeline/request_fields.h over
// io/fields.h): every reader (flag words, a --jobs overlay, the wire's complete JSON) goes through
// the same field, so a value read one way reads the same another.
#include <set>

#include "core/error.h"
#include "io/fields.h"
#include "pipeline/request_fields.h"
#include "support/catch.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

const fields::Field& by_flag(const fields::FieldList& list, const std::string& flag) {
  for (const fields::Field& f : list)
    for (const std::string& n : f.flags)
      if (n == flag) return f;
  FAIL("no field has the flag " << flag);
  throw std::logic_error("unreachable");
}

std::vector<std::string> flags_of(const fields::FieldList& list) {
  std::vector<std::string> out;
  for (const fields::Field& f : list)
    for (const std::string& n : f.flags) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("request fields: keys and flags are unique, the same keys for both pipelines") {
  for (PipelineKind kind : {PipelineKind::Distilled, PipelineKind::TwoStage}) {
    GenerationRequest r;
    ModelPaths p;
    fields::FieldList list = request_fields(r, kind);
    for (fields::Field& f : model_path_fields(p, kind)) list.push_back(std::move(f));
    std::set<std::string> names, flags;
    for (const fields::Field& f : list) {
      CHECK(names.insert(f.json_name()).second);
      for (const std::string& n : f.flags) CHECK(flags.insert(n).second);
      CHECK(f.set_json);
      CHECK(f.get_json);
      if (!f.flags.empty()) CHECK(f.set_words);
    }
  }
  GenerationRequest a, b;
  const json distilled = fields::to_json(request_fields(a, PipelineKind::Distilled));
  const json two_stage = fields::to_json(request_fields(b, PipelineKind::TwoStage));
  CHECK(distilled == two_stage);
  // The guidance and step flags are the two-stage pipeline's only; the distilled one keeps the keys.
  const auto distilled_flags = flags_of(request_fields(a, PipelineKind::Distilled));
  CHECK(std::count(distilled_flags.begin(), distilled_flags.end(), "--video-cfg-guidance-scale") == 0);
  CHECK(std::count(distilled_flags.begin(), distilled_flags.end(), "--num-inference-steps") == 0);
  CHECK(distilled.at("video_guidance").contains("cfg_scale"));
}

TEST_CASE("request fields: a value set from flag words writes the JSON a --jobs line would set") {
  GenerationRequest from_flags = default_request(PipelineKind::TwoStage);
  {
    const fields::FieldList list = request_fields(from_flags, PipelineKind::TwoStage);
    by_flag(list, "--seed").set_words({"42"});
    by_flag(list, "--height").set_words({"512.0"});
    by_flag(list, "--frame-rate").set_words({"12.5"});
    by_flag(list, "--no-audio").set_words({});
    by_flag(list, "--video-stg-blocks").set_words({"3", "4"});
    by_flag(list, "--a2v-guidance-scale").set_words({"2"});
    by_flag(list, "--image").set_words({"a.png", "8", "0.5"});
    by_flag(list, "--image").set_words({"b.png", "0", "1", "0"});
  }
  GenerationRequest from_json = default_request(PipelineKind::TwoStage);
  fields::from_json(request_fields(from_json, PipelineKind::TwoStage),
                    json::parse(R"({"seed": 42, "height": 512, "frame_rate": 12.5, "no_audio": true,
                                    "video_guidance": {"stg_blocks": [3, 4], "modality_scale": 2},
                                    "images": [["a.png", 8, 0.5], {"path": "b.png", "crf": 0}]})"),
                    fields::JsonRead::Overlay);
  CHECK(to_json(from_flags) == to_json(from_json));
  CHECK(from_flags.seed == 42);
  CHECK(from_flags.height == 512);
  CHECK(from_flags.no_audio);
  CHECK(from_flags.video_guidance.modality_scale == 2.0);
  CHECK(from_flags.audio_guidance.modality_scale == default_audio_guidance().modality_scale);
  REQUIRE(from_flags.images.size() == 2);
  CHECK(from_flags.images[0].crf == -1);
  CHECK(from_flags.images[1].crf == 0);
  // The wire: written in full, read back in full.
  CHECK(to_json(request_from_json(to_json(from_flags))) == to_json(from_flags));
}

TEST_CASE("request fields: malformed words and JSON are refused naming the flag or the field") {
  GenerationRequest r;
  const fields::FieldList list = request_fields(r, PipelineKind::TwoStage);
  CHECK_THROWS_WITH(by_flag(list, "--seed").set_words({"many"}), "--seed: 'many' is not a whole number");
  CHECK_THROWS_WITH(by_flag(list, "--height").set_words({"1.5"}), "--height: '1.5' is not a whole number");
  CHECK_THROWS_WITH(by_flag(list, "--height").set_words({"4294967360"}),
                    "--height: '4294967360' is out of range [-2147483648, 2147483647]");
  CHECK_THROWS_WITH(by_flag(list, "--frame-rate").set_words({"inf"}), "--frame-rate: 'inf' is not a number");
  CHECK_THROWS_WITH(by_flag(list, "--image").set_words({"a.png", "0", "abc"}),
                    "--image a.png STRENGTH: 'abc' is not a number");
  CHECK_THROWS_WITH(by_flag(list, "--video-stg-blocks").set_words({"1", "x"}),
                    "--video-stg-blocks: 'x' is not a whole number");
  const auto overlay = [&](const char* text) {
    fields::from_json(list, json::parse(text), fields::JsonRead::Overlay);
  };
  CHECK_THROWS_WITH(overlay(R"({"colour": 1})"), "unknown field 'colour'");
  CHECK_THROWS_WITH(overlay(R"({"video_guidance": {"cfg": 1}})"), "unknown field 'video_guidance.cfg'");
  CHECK_THROWS_WITH(overlay(R"({"video_guidance": 3})"),
                    "field 'video_guidance': must be an object, got number");
  CHECK_THROWS_WITH(overlay(R"({"prompt": 3})"), "field 'prompt': must be a string, got number");
  CHECK_THROWS_WITH(overlay(R"({"images": [{"path": "a", "size": 2}]})"), "unknown field 'images.size'");
  // The wire reads every field: a missing one is named.
  json wire = to_json(r);
  wire.at("audio_guidance").erase("skip_step");
  CHECK_THROWS_WITH(request_from_json(wire),
                    "malformed generation request: field 'audio_guidance.skip_step' is missing");
}

TEST_CASE("model path fields: flags by pipeline, LoRAs from words and JSON, the wire in full") {
  ModelPaths p;
  const fields::FieldList distilled = model_path_fields(p, PipelineKind::Distilled);
  by_flag(distilled, "--checkpoint-path").set_words({"ckpt.safetensors"});  // the alias
  CHECK(p.checkpoint == "ckpt.safetensors");
  by_flag(distilled, "--lora").set_words({"a.safetensors"});
  by_flag(distilled, "--lora").set_words({"b.safetensors", "0.5"});
  REQUIRE(p.loras.size() == 2);
  CHECK(p.loras[0].strength == 1.0);
  CHECK(p.loras[1].strength == 0.5);
  CHECK_THROWS_WITH(by_flag(distilled, "--lora").set_words({"c", "x"}),
                    "--lora c STRENGTH: 'x' is not a number");
  const auto names = flags_of(distilled);
  CHECK(std::count(names.begin(), names.end(), "--distilled-lora") == 0);
  const fields::FieldList two_stage = model_path_fields(p, PipelineKind::TwoStage);
  // --distilled-lora is repeatable, as the reference's.
  by_flag(two_stage, "--distilled-lora").set_words({"d.safetensors", "0.8"});
  by_flag(two_stage, "--distilled-lora").set_words({"e.safetensors"});
  REQUIRE(p.distilled_loras.size() == 2);
  CHECK(p.distilled_loras[0].path == "d.safetensors");
  CHECK(p.distilled_loras[0].strength == 0.8);
  CHECK(p.distilled_loras[1].path == "e.safetensors");
  CHECK(p.distilled_loras[1].strength == 1.0);
  CHECK(to_json(model_paths_from_json(to_json(p))) == to_json(p));
  json wire = to_json(p);
  wire["loras"] = json::array({{{"path", "a"}}});
  CHECK_THROWS_WITH(model_paths_from_json(wire), Contains("field 'loras': a LoRA is"));
}

TEST_CASE("field words: numbers and whole numbers, each refusal naming what it read") {
  CHECK(fields::integer_from_text("-12", "x") == -12);
  CHECK(fields::integer_from_text("1e3", "x") == 1000);
  CHECK(fields::integer_from_text("128.0", "x") == 128);
  CHECK_THROWS_WITH(fields::integer_from_text("12a", "--n"), "--n: '12a' is not a number");
  CHECK_THROWS_WITH(fields::integer_from_text("", "--n"), "--n: '' is not a whole number");
  CHECK_THROWS_WITH(fields::integer_from_text("99999999999999999999", "--n"),
                    Contains("--n: '99999999999999999999' is out of range"));
  CHECK_THROWS_WITH(fields::integer_from_text("1e30", "--n"), Contains("is out of range"));
  CHECK_THROWS_WITH(fields::integer_from_text("7", "--n", 0, 5), "--n: '7' is out of range [0, 5]");
  CHECK(fields::number_from_text("0.25", "x") == 0.25);
  CHECK_THROWS_WITH(fields::number_from_text("nan", "--f"), "--f: 'nan' is not a number");
}
