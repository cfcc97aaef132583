// The split checkpoint layout (--transformer-path, --text-encoder-path, --video-vae-path,
// --audio-vae-path) runs the same model as the monolith: the pipeline_distilled fixture's monolith
// is cut into the four files by component, and both layouts must give identical frames and audio.
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

Output run(const ModelPaths& paths, const std::string& out_dir) {
  auto engine = pipeline::make_local_engine(PipelineKind::Distilled, paths);
  GenerationRequest r;
  r.prompt = "a fox in the snow";
  r.seed = 4;
  r.height = 64;
  r.width = 128;
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

}  // namespace

TEST_CASE("split layout: the four component files give the monolith's frames and audio") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  auto monolith = SafetensorsFile::open(dir + "/checkpoint.safetensors");
  std::map<std::string, std::string> meta = monolith->metadata();
  std::vector<std::pair<std::string, Tensor>> transformer, text, video, audio;
  for (const auto& t : monolith->tensors()) {
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
  REQUIRE(!text.empty());
  REQUIRE(!video.empty());
  REQUIRE(!audio.empty());
  test::ScratchDir scratch("split_layout");
  write_safetensors(scratch.file("transformer.safetensors"), transformer, meta);
  write_safetensors(scratch.file("text_encoder.safetensors"), text, meta);
  write_safetensors(scratch.file("video_vae.safetensors"), video, meta);
  write_safetensors(scratch.file("audio_vae.safetensors"), audio, meta);

  ModelPaths mono;
  mono.checkpoint = dir + "/checkpoint.safetensors";
  mono.gemma_root = dir + "/gemma";
  mono.spatial_upsampler = dir + "/spatial_upsampler.safetensors";
  ModelPaths split = mono;
  split.checkpoint.clear();
  split.transformer = scratch.file("transformer.safetensors");
  split.text_encoder = scratch.file("text_encoder.safetensors");
  split.video_vae = scratch.file("video_vae.safetensors");
  split.audio_vae = scratch.file("audio_vae.safetensors");

  Output a = run(mono, scratch.path()), b = run(split, scratch.path());
  REQUIRE(a.frames.shape() == Shape{9, 64, 128, 3});
  REQUIRE(test::max_abs_diff(a.frames, b.frames) == 0.f);
  REQUIRE(test::max_abs_diff(a.audio, b.audio) == 0.f);
}
