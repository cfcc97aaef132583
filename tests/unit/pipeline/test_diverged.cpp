// A job whose denoising diverges (a huge weight in the transformer; a NaN or an infinity there is
// refused as the checkpoint loads) fails with a message naming the stage before anything is
// decoded, instead of writing a garbage video.
#include <limits>

#include "io/safetensors.h"
#include "pipeline/generation_engine.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("pipeline: a stage whose latents diverge fails the job instead of decoding them") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  auto monolith = SafetensorsFile::open(dir + "/checkpoint.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  bool poisoned = false;
  for (const auto& t : monolith->tensors()) {
    Tensor v = monolith->tensor(t.name).to(DType::F32).clone();
    // The transformer's output projection bias: the velocities, hence the latents, overflow.
    if (t.name == "model.diffusion_model.proj_out.bias") {
      v.data<float>()[0] = std::numeric_limits<float>::max();
      poisoned = true;
    }
    tensors.emplace_back(t.name, v);
  }
  REQUIRE(poisoned);
  test::ScratchDir scratch("diverged");
  write_safetensors(scratch.file("checkpoint.safetensors"), tensors, monolith->metadata());
  ModelPaths paths = test::fixture_model_paths(dir);
  paths.checkpoint = scratch.file("checkpoint.safetensors");
  auto engine = pipeline::make_local_engine(PipelineKind::Distilled, paths);
  GenerationRequest r;
  r.prompt = "a fox in the snow";
  r.height = 64;
  r.width = 128;
  r.num_frames = 9;
  r.output_path = scratch.file("o.mp4");
  int chunks = 0;
  pipeline::PipelineCallbacks cb;
  cb.video_chunk = [&](const Tensor&) { ++chunks; };
  REQUIRE_THROWS_WITH(engine->generate(r, cb), Catch::Matchers::Contains("stage1's video latent holds NaN"));
  REQUIRE(chunks == 0);
}
