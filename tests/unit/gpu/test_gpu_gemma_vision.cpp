// Gemma 3's vision tower and projector on the GPU against the golden case enhance_prompt_image (the
// reference's float32 CPU run), and the image-to-video rewrite there.
//
// bf16: the golden README's rule (gpu_compare.h check_bf16_rule: at most 2x the naive bf16 error
// plus atol 1e-3), the naive run being the same tower placed in bf16 on the CPU, where every op
// rounds its result to bf16 as the GPU's do (ops/cpu/bf16_widening.h). f32: the case's tolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "gpu_compare.h"
#include "io/safetensors.h"
#include "models/text/gemma3.h"
#include "models/text/gemma3_vision.h"
#include "models/text/prompt_enhancer.h"
#include "models/text/tokenizer.h"
#include "support/test_util.h"

using namespace ltx2;
using test::check_bf16_rule;
using test::round_bf16;

namespace {

const char* kCase = "enhance_prompt_image";

Tensor io(const std::string& name) {
  return SafetensorsFile::open(test::golden_dir(kCase) + "/io.safetensors")->tensor(name).clone();
}

nlohmann::json spec() {
  std::ifstream in(test::golden_dir(kCase) + "/case.json");
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("gpu: the Gemma 3 vision tower and projector in bf16 (2x rule) and f32 (the case's tolerance)") {
  const std::string gemma = test::golden_dir(kCase) + "/gemma";
  const Tensor pixels = io("mid.vision.pixel_values");
  const Tensor want_hidden = io("mid.vision.last_hidden_state"),
               want_features = io("mid.vision.image_features");

  const auto gpu = Gemma3VisionTower::open(gemma, DType::BF16, test::gpu());
  const Tensor hidden = gpu->encode(pixels);
  REQUIRE(hidden.device() == test::gpu());
  REQUIRE(hidden.dtype() == DType::BF16);
  const Tensor features = gpu->project(hidden);
  const auto naive = Gemma3VisionTower::open(gemma, DType::BF16, Device::cpu());
  const Tensor naive_hidden = naive->encode(pixels);
  check_bf16_rule("vision tower last_hidden_state", test::to_host_f32(hidden),
                  test::to_host_f32(naive_hidden), want_hidden);
  check_bf16_rule("vision projector image_features", test::to_host_f32(features),
                  test::to_host_f32(naive->project(naive_hidden)), want_features);

  const auto f32 = Gemma3VisionTower::open(gemma, DType::F32, test::gpu());
  const nlohmann::json tol = spec().at("tolerance").at("vision");
  const double atol = tol.at("atol").get<double>(), rtol = tol.at("rtol").get<double>();
  for (const auto& [what, got, want] :
       {std::tuple{"last_hidden_state", f32->encode(pixels), want_hidden},
        std::tuple{"image_features", f32->project(want_hidden), want_features}}) {
    const auto g = test::to_host_f32(got).to_vector(), w = want.to_vector();
    REQUIRE(g.size() == w.size());
    double worst = 0;
    for (size_t i = 0; i < g.size(); ++i)
      worst = std::max(worst, std::fabs(double(g[i]) - w[i]) / (atol + rtol * std::fabs(double(w[i]))));
    std::printf("vision %s: f32 on the GPU, worst |d| / (atol + rtol |ref|) = %.4g\n", what, worst);
    INFO(what << ": worst " << worst);
    CHECK(worst <= 1.0);
  }
}

TEST_CASE("gpu: the image-to-video rewrite in f32 gives the reference's tokens") {
  const std::string gemma_dir = test::golden_dir(kCase) + "/gemma";
  const nlohmann::json s = spec();
  auto gemma = Gemma3TextModel::open(gemma_dir, DType::F32, test::gpu());
  const auto vision = Gemma3VisionTower::open(gemma_dir, DType::F32, test::gpu());
  GemmaTokenizer tok(gemma_dir);
  EnhanceSettings settings;
  settings.system_prompt = s.at("system_prompt").get<std::string>();
  settings.max_new_tokens = s.at("max_new_tokens").get<int64_t>();
  const EnhancedPrompt e = enhance_prompt_with_image(*gemma, *vision, tok, s.at("prompt").get<std::string>(),
                                                     io("mid.vision.pixel_values"), settings);
  CHECK(e.generated_ids == io("out.enhance.generated_ids").to_vector_i64());
  CHECK(e.text == s.at("enhanced_prompt").get<std::string>());
}
