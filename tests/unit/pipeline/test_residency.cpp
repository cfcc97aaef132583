// The residency plan (pipeline/residency.h): every model kept when the budget allows, the largest
// evictable one made per-phase first when it does not, the transformer never, and a job that cannot
// fit at all refused with the phase and the GiB it needs. Also: a pipeline whose plan makes models
// per-phase gives the same video as one that keeps them, and really drops them between phases.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/pipeline.h"
#include "pipeline/residency.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::pipeline;

namespace {

ModelPaths fixture_paths() {
  return test::fixture_model_paths(test::golden_dir("pipeline_distilled"));
}

const RequestShape kFull{1024, 1536, 121, false, false};
constexpr uint64_t kGiB = 1ull << 30;

uint64_t all_resident_peak(const ResidencyPlan& plan) {
  ResidencyPlan all = plan;
  all.resident.fill(true);
  return all.phase_peak(all.peak_phase());
}

}  // namespace

TEST_CASE("residency: everything stays when it fits") {
  const ResidencyPlan plan =
      plan_residency(fixture_paths(), PipelineOptions::on_device(Device::cuda(0)), {kFull}, 200 * kGiB);
  for (ModelPart p : kModelParts) REQUIRE(plan.keeps(p));
  REQUIRE(plan.weights(ModelPart::Transformer) > 0);
  REQUIRE(plan.weights(ModelPart::Text) > 0);
  REQUIRE(plan.phase_peak(plan.peak_phase()) <= 200 * kGiB);
  REQUIRE_THAT(plan.describe(), Catch::Matchers::Contains("loaded per phase: none"));
}

TEST_CASE("residency: when over budget the largest model the peak phase does not run goes per-phase") {
  const ModelPaths paths = fixture_paths();
  const PipelineOptions options = PipelineOptions::on_device(Device::cuda(0));
  const ResidencyPlan roomy = plan_residency(paths, options, {kFull}, 200 * kGiB);
  const uint64_t peak = all_resident_peak(roomy);
  const PhaseMemory& peak_phase = roomy.peak_phase();
  // One byte short: exactly one model can go, the largest evictable one the peak phase does not run.
  const ResidencyPlan tight = plan_residency(paths, options, {kFull}, peak - 1);
  ModelPart expected = ModelPart::Transformer;
  uint64_t largest = 0;
  for (ModelPart p : {ModelPart::Text, ModelPart::Upsampler, ModelPart::VideoDecoder, ModelPart::Audio}) {
    const bool used =
        std::find(peak_phase.parts.begin(), peak_phase.parts.end(), p) != peak_phase.parts.end();
    if (!used && roomy.weights(p) > largest) {
      largest = roomy.weights(p);
      expected = p;
    }
  }
  REQUIRE(expected != ModelPart::Transformer);
  int evicted = 0;
  for (ModelPart p : kModelParts) evicted += tight.keeps(p) ? 0 : 1;
  REQUIRE(evicted == 1);
  REQUIRE_FALSE(tight.keeps(expected));
  REQUIRE(tight.keeps(ModelPart::Transformer));
  REQUIRE(tight.phase_peak(tight.peak_phase()) <= peak - 1);
  REQUIRE_THAT(tight.describe(), Catch::Matchers::Contains(model_part_name(expected)));
}

TEST_CASE("residency: a job that cannot fit is refused naming the phase and the GiB") {
  using Catch::Matchers::Contains;
  const PipelineOptions options = PipelineOptions::on_device(Device::cuda(0));
  // The full-size decode's activations alone are over 4 GiB.
  REQUIRE_THROWS_WITH(
      plan_residency(fixture_paths(), options, {kFull}, 3 * kGiB),
      Contains("needs") && Contains("GiB on cuda:0") && Contains("but 3.0 GiB are available"));
  try {
    plan_residency(fixture_paths(), options, {kFull}, 3 * kGiB);
  } catch (const Error& e) {
    const std::string m = e.what();
    bool names_phase = false;
    for (const char* phase : {"text encode", "stage 1", "upsample", "stage 2", "decode", "audio"})
      names_phase = names_phase || m.rfind(phase, 0) == 0;
    REQUIRE(names_phase);
  }
  // The largest request of several counts.
  const RequestShape small{128, 192, 9, false, false};
  REQUIRE_NOTHROW(plan_residency(fixture_paths(), options, {small}, 6 * kGiB));
  REQUIRE_THROWS(plan_residency(fixture_paths(), options, {small, kFull}, 6 * kGiB));
}

TEST_CASE("residency: activation estimates grow with the job") {
  REQUIRE(transformer_activation_bytes(24576, 1024) > transformer_activation_bytes(6144, 1024));
  REQUIRE(decode_activation_bytes(1024, 1536, 121) > decode_activation_bytes(512, 768, 121));
  const std::vector<RequestShape> shapes = {kFull, {64, 64, 9, true, true}};
  const auto back = request_shapes_from_json(to_json(shapes));
  REQUIRE(back.size() == 2);
  REQUIRE(back[1].height == 64);
  REQUIRE(back[1].images);
  REQUIRE(back[1].guided);
  REQUIRE_FALSE(back[0].guided);
  REQUIRE(back[0].refines);
  const std::vector<RequestShape> one_stage = {{64, 64, 9, false, true, 1, false}};
  REQUIRE_FALSE(request_shapes_from_json(to_json(one_stage))[0].refines);
}

TEST_CASE("residency: the one-stage pipeline plans no upsample or stage 2, and stage 1 at full size") {
  ModelPaths paths = fixture_paths();
  paths.spatial_upsampler.clear();
  const PipelineOptions options = PipelineOptions::on_device(Device::cuda(0));
  GenerationRequest r;
  r.height = 1024;
  r.width = 1536;
  r.num_frames = 121;
  const RequestShape one = request_shape(r, PipelineKind::OneStage);
  REQUIRE_FALSE(one.refines);
  REQUIRE(one.guided);
  REQUIRE(request_shape(r, PipelineKind::Keyframes).refines);
  const ResidencyPlan plan = plan_residency(paths, options, {one}, 200 * kGiB);
  REQUIRE(plan.weights(ModelPart::Upsampler) == 0);
  std::vector<std::string> phases;
  uint64_t stage1 = 0;
  for (const PhaseMemory& phase : plan.phases) {
    phases.push_back(phase.phase);
    if (phase.phase == "stage 1") stage1 = phase.activation_bytes;
  }
  REQUIRE(phases == std::vector<std::string>{"text encode", "stage 1", "decode", "audio"});
  // 24,576 full-size video tokens, not the quarter of them a half-size stage 1 has.
  REQUIRE(stage1 == transformer_activation_bytes(24576, 1024));
  RequestShape two = one;
  two.refines = true;
  for (const PhaseMemory& phase : plan_residency(fixture_paths(), options, {two}, 200 * kGiB).phases)
    if (phase.phase == "stage 1") REQUIRE(phase.activation_bytes == transformer_activation_bytes(6144, 1024));
}

TEST_CASE("residency: per-phase models give the same video and are gone between phases") {
  const ModelPaths paths = fixture_paths();
  GenerationRequest r;
  r.prompt = "a fox in the snow";
  r.seed = 4;
  r.height = 64;
  r.width = 128;
  r.num_frames = 9;
  test::ScratchDir out("residency_run");
  r.output_path = out.file("o.mp4");

  // A CPU plan with every evictable model per-phase (a plan is the GPU's business, but the release
  // and reload are the same code on any device).
  PipelineOptions per_phase;
  ResidencyPlan plan =
      plan_residency(paths, per_phase, {request_shape(r, PipelineKind::Distilled)}, 200 * kGiB);
  for (ModelPart p : {ModelPart::Text, ModelPart::Upsampler, ModelPart::VideoDecoder, ModelPart::Audio})
    plan.resident[static_cast<size_t>(p)] = false;
  per_phase.residency = plan;

  DistilledPipeline kept(paths), dropped(paths, per_phase);
  REQUIRE(kept.models().text != nullptr);
  REQUIRE(dropped.models().text == nullptr);  // loaded when its phase comes
  REQUIRE(dropped.models().video_decoder == nullptr);
  for (int job = 0; job < 2; ++job) {
    std::vector<Tensor> a, b;
    Tensor wave_a, wave_b;
    PipelineCallbacks ca, cb;
    ca.video_chunk = [&](const Tensor& f) { a.push_back(f.clone()); };
    ca.audio = [&](const Tensor& w, int64_t) { wave_a = w.clone(); };
    bool text_gone_in_stage1 = false;
    cb.video_chunk = [&](const Tensor& f) { b.push_back(f.clone()); };
    cb.audio = [&](const Tensor& w, int64_t) { wave_b = w.clone(); };
    cb.progress = [&](const std::string& stage, int, int) {
      if (stage == "stage1") text_gone_in_stage1 = dropped.models().text == nullptr;
    };
    kept.run(r, ca);
    dropped.run(r, cb);
    REQUIRE(text_gone_in_stage1);
    REQUIRE(dropped.models().video_decoder == nullptr);
    REQUIRE(dropped.models().audio_decoder == nullptr);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(test::max_abs_diff(a[i], b[i]) == 0.0f);
    REQUIRE(test::max_abs_diff(wave_a, wave_b) == 0.0f);
  }
}

TEST_CASE("residency: stage 2 counts the copies the distilled LoRA fuses, user LoRAs stay resident") {
  const std::string dir = test::golden_dir("pipeline_ti2vid");
  ModelPaths p = test::fixture_model_paths(dir);
  const PipelineOptions options = PipelineOptions::on_device(Device::cuda(0));
  const auto stage2 = [](const ResidencyPlan& plan) {
    for (const PhaseMemory& phase : plan.phases)
      if (phase.phase == "stage 2") return phase.activation_bytes;
    FAIL("no stage 2");
    return uint64_t{0};
  };
  const ResidencyPlan plain = plan_residency(p, options, {kFull}, 200 * kGiB);
  p.distilled_loras = {{dir + "/distilled_lora.safetensors", 1.0}};
  const ResidencyPlan staged = plan_residency(p, options, {kFull}, 200 * kGiB);
  REQUIRE(stage2(staged) > stage2(plain));
  REQUIRE(staged.weights(ModelPart::Transformer) == plain.weights(ModelPart::Transformer));
  // The same file as a user LoRA: fused at load, so its copies count as resident transformer bytes.
  p.loras = {{dir + "/distilled_lora.safetensors", 0.5}};
  p.distilled_loras = {};
  const ResidencyPlan user = plan_residency(p, options, {kFull}, 200 * kGiB);
  REQUIRE(user.weights(ModelPart::Transformer) - plain.weights(ModelPart::Transformer) ==
          stage2(staged) - stage2(plain));
}

TEST_CASE("residency: the HQ pipeline's stage 1 counts the distilled LoRA's copies too") {
  const std::string dir = test::golden_dir("pipeline_ti2vid");
  ModelPaths p = test::fixture_model_paths(dir);
  p.distilled_loras = {{dir + "/distilled_lora.safetensors", 1.0}};
  const PipelineOptions options = PipelineOptions::on_device(Device::cuda(0));
  GenerationRequest r;
  const auto stage1 = [&](PipelineKind kind) {
    for (const PhaseMemory& phase : plan_residency(p, options, {request_shape(r, kind)}, 200 * kGiB).phases)
      if (phase.phase == "stage 1") return phase.activation_bytes;
    FAIL("no stage 1");
    return uint64_t{0};
  };
  REQUIRE(request_shape(r, PipelineKind::Hq).lora_in_stage1);
  REQUIRE_FALSE(request_shape(r, PipelineKind::TwoStage).lora_in_stage1);
  REQUIRE(stage1(PipelineKind::Hq) > stage1(PipelineKind::TwoStage));
}
