// The split checkpoint layout (--transformer-path, --text-encoder-path, --video-vae-path,
// --audio-vae-path) runs the same model as the monolith: a fixture's monolith is cut into the four
// files by component, and both layouts must give identical frames and audio, also when the
// text-encoder file is the reference's packed one holding Gemma (no --gemma-root).
#include "core/error.h"
#include "io/layout.h"
#include "io/safetensors.h"
#include "ops/shape.h"
#include "pipeline/generation_engine.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

struct Output {
  Tensor frames, audio;
};

Output run(const ModelPaths& paths, const std::string& out_dir, int width = 128) {
  auto engine = pipeline::make_local_engine(PipelineKind::Distilled, paths);
  GenerationRequest r;
  r.prompt = "a fox in the snow";
  r.seed = 4;
  r.height = 64;
  r.width = width;
  r.num_frames = 9;
  r.output_path = out_dir + "/o.mp4";
  std::vector<Tensor> chunks;
  Output out;
  pipeline::PipelineCallbacks cb;
  cb.video_chunk = [&](const Tensor& f) { chunks.push_back(f.clone()); };
  cb.audio = [&](const Tensor& w, int64_t) { out.audio = w.clone(); };
  engine->generate(r, cb);
  out.frames = ops::cat(chunks, 0);
  return out;
}

// Cuts a monolith into the split layout's files in `scratch`, by component; the text-encoder
// file is `text_encoder` when given (the tensors it holds are then left out of the others).
ModelPaths cut_monolith(const std::string& checkpoint, test::ScratchDir& scratch,
                        const std::string& text_encoder = "") {
  auto monolith = SafetensorsFile::open(checkpoint);
  auto given = text_encoder.empty() ? nullptr : SafetensorsFile::open(text_encoder);
  std::map<std::string, std::string> meta = monolith->metadata();
  std::vector<std::pair<std::string, Tensor>> transformer, text, video, audio;
  for (const auto& t : monolith->tensors()) {
    if (given && given->contains(t.name)) continue;
    switch (classify_key(t.name)) {
      case Component::Transformer: transformer.emplace_back(t.name, monolith->tensor(t.name)); break;
      case Component::TextConnector: text.emplace_back(t.name, monolith->tensor(t.name)); break;
      case Component::VideoDecoder:
      case Component::VideoEncoder:
      case Component::VideoStats: video.emplace_back(t.name, monolith->tensor(t.name)); break;
      case Component::AudioDecoder:
      case Component::AudioEncoder:
      case Component::AudioStats:
      case Component::Vocoder: audio.emplace_back(t.name, monolith->tensor(t.name)); break;
      default: FAIL("unexpected tensor " << t.name);
    }
  }
  REQUIRE(!transformer.empty());
  REQUIRE(!video.empty());
  REQUIRE(!audio.empty());
  // The reference's split layout: the connectors live in the transformer file when the text-encoder
  // file is its packed Gemma one.
  if (given)
    transformer.insert(transformer.end(), text.begin(), text.end());
  else
    write_safetensors(scratch.file("text_encoder.safetensors"), text, meta);
  write_safetensors(scratch.file("transformer.safetensors"), transformer, meta);
  write_safetensors(scratch.file("video_vae.safetensors"), video, meta);
  write_safetensors(scratch.file("audio_vae.safetensors"), audio, meta);
  ModelPaths split;
  split.transformer = scratch.file("transformer.safetensors");
  split.text_encoder = given ? text_encoder : scratch.file("text_encoder.safetensors");
  split.video_vae = scratch.file("video_vae.safetensors");
  split.audio_vae = scratch.file("audio_vae.safetensors");
  return split;
}

// A pipeline fixture's model set in the monolith layout.
ModelPaths monolith_paths(const std::string& fixture) {
  const std::string dir = test::golden_dir(fixture);
  ModelPaths p;
  p.checkpoint = dir + "/checkpoint.safetensors";
  p.gemma_root = dir + "/gemma";
  p.spatial_upsampler = dir + "/spatial_upsampler.safetensors";
  return p;
}

}  // namespace

TEST_CASE("split layout: the four component files give the monolith's frames and audio") {
  test::ScratchDir scratch("split_layout");
  const ModelPaths mono = monolith_paths("pipeline_distilled");
  ModelPaths split = cut_monolith(mono.checkpoint, scratch);
  split.gemma_root = mono.gemma_root;
  split.spatial_upsampler = mono.spatial_upsampler;

  Output a = run(mono, scratch.path()), b = run(split, scratch.path());
  REQUIRE(a.frames.shape() == Shape{9, 64, 128, 3});
  REQUIRE(test::max_abs_diff(a.frames, b.frames) == 0.f);
  REQUIRE(test::max_abs_diff(a.audio, b.audio) == 0.f);
}

TEST_CASE("split layout: the reference's packed text-encoder file stands in for --gemma-root") {
  // The text_encoder_file fixture packs pipeline_ti2vid's Gemma folder and text projection.
  test::ScratchDir scratch("split_layout_packed");
  const ModelPaths mono = monolith_paths("pipeline_ti2vid");
  ModelPaths split =
      cut_monolith(mono.checkpoint, scratch, test::golden_dir("text_encoder_file") + "/text_encoder.safetensors");
  split.spatial_upsampler = mono.spatial_upsampler;
  REQUIRE_NOTHROW(validate_model_paths(split, PipelineKind::Distilled));

  Output a = run(mono, scratch.path(), 64), b = run(split, scratch.path(), 64);
  REQUIRE(a.frames.shape() == Shape{9, 64, 64, 3});
  REQUIRE(test::max_abs_diff(a.frames, b.frames) == 0.f);
  REQUIRE(test::max_abs_diff(a.audio, b.audio) == 0.f);
}
