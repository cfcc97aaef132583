// Quantized checkpoints: scales are honoured on load, malformed files are refused when opened (one
// line naming the tensor and the file), and --quantization values parse as the reference spells them.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/quantization.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "models/transformer/weights.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

using Tensors = std::vector<std::pair<std::string, Tensor>>;

// A quantized linear "lin": F8_E4M3 weight with its scale and input scale, a float bias.
Tensors quantized_linear() {
  return {{"lin.weight", Tensor::from_vector({0.5f, -1.f, 2.f, 448.f}, {2, 2}).to(DType::F8E4M3)},
          {"lin.weight_scale", Tensor::scalar(0.25f)},
          {"lin.input_scale", Tensor::scalar(1.f)},
          {"lin.bias", Tensor::from_vector({1.f, 2.f}, {2})}};
}

std::string write(test::ScratchDir& dir, const std::string& name, const Tensors& tensors) {
  write_safetensors(dir.file(name), tensors);
  return dir.file(name);
}

std::string open_error(const std::string& path) {
  try {
    WeightSet::open({path});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("quantization: a weight with a scale loads as float(stored) x scale, in any dtype") {
  test::ScratchDir dir("quant_load");
  Tensors t = quantized_linear();
  t.emplace_back("other.bias", Tensor::from_vector({3.f, 5.f}, {2}).to(DType::F8E5M2));
  t.emplace_back("other.bias_scale", Tensor::from_vector({2.f}, {1}));
  const auto set = WeightSet::open({write(dir, "q.safetensors", t)});
  REQUIRE(set->info("lin.weight").dtype == DType::F8E4M3);
  const WeightView view(set, {""}, "test");
  CHECK(view.load("lin.weight").to_vector() == std::vector<float>{0.125f, -0.25f, 0.5f, 112.f});
  CHECK(view.load("lin.weight", DType::BF16).dtype() == DType::BF16);
  CHECK(view.load("lin.weight", DType::BF16).to_vector() == std::vector<float>{0.125f, -0.25f, 0.5f, 112.f});
  CHECK(view.load("lin.bias").to_vector() == std::vector<float>{1.f, 2.f});  // no scale: as stored
  CHECK(view.load("other.bias").to_vector() == std::vector<float>{6.f, 10.f});
  // The raw view keeps the stored bytes.
  CHECK(set->raw("lin.weight").to(DType::F32).to_vector() == std::vector<float>{0.5f, -1.f, 2.f, 448.f});
}

TEST_CASE("quantization: a malformed FP8 file is refused when opened, naming the tensor") {
  test::ScratchDir dir("quant_bad");
  SECTION("an FP8 weight without its scale") {
    Tensors t = quantized_linear();
    t.erase(t.begin() + 1);
    const std::string e = open_error(write(dir, "noscale.safetensors", t));
    CHECK_THAT(e, Contains("noscale.safetensors") && Contains("tensor 'lin.weight' is F8_E4M3 but its scale "
                                                              "'lin.weight_scale' is missing"));
  }
  SECTION("a scale that is not a scalar") {
    Tensors t = quantized_linear();
    t[1].second = Tensor::from_vector({0.25f, 0.5f}, {2});
    CHECK_THAT(open_error(write(dir, "vector.safetensors", t)),
               Contains("scale 'lin.weight_scale' must be one float value, not F32 of shape [2]"));
  }
  SECTION("a scale for a tensor that is not there") {
    Tensors t = quantized_linear();
    t.emplace_back("gone.weight_scale", Tensor::scalar(1.f));
    CHECK_THAT(open_error(write(dir, "orphan.safetensors", t)),
               Contains("scale 'gone.weight_scale' belongs to 'gone.weight', which is not in the file"));
    Tensors u = quantized_linear();
    u.emplace_back("gone.input_scale", Tensor::scalar(1.f));
    CHECK_THAT(open_error(write(dir, "orphan_input.safetensors", u)),
               Contains("scale 'gone.input_scale' belongs to 'gone.weight'"));
  }
  SECTION("an unknown scale key") {
    Tensors t = quantized_linear();
    t.emplace_back("lin.output_scale", Tensor::scalar(1.f));
    CHECK_THAT(open_error(write(dir, "unknown.safetensors", t)),
               Contains("unknown scale tensor 'lin.output_scale'"));
  }
  SECTION("an FP8 tensor that is neither a weight nor a bias") {
    Tensors t = quantized_linear();
    t.emplace_back("table", Tensor::from_vector({1.f}, {1}).to(DType::F8E4M3));
    CHECK_THAT(open_error(write(dir, "table.safetensors", t)),
               Contains("tensor 'table' is F8_E4M3 but is neither a .weight nor a .bias"));
  }
  SECTION("a well-formed file opens") {
    CHECK(open_error(write(dir, "good.safetensors", quantized_linear())).empty());
  }
}

TEST_CASE("quantization: an unquantized file may hold names ending in _scale-like words") {
  test::ScratchDir dir("quant_plain");
  // Only sets with an 8-bit tensor or a scale key are held to the scale rules.
  CHECK(open_error(write(dir, "plain.safetensors", {{"block.scale_shift_table", Tensor::scalar(1.f)}}))
            .empty());
}

TEST_CASE("quantization: --quantization values as the reference spells them") {
  CHECK(parse_quantization("none") == Quantization::None);
  CHECK(parse_quantization("fp8-cast") == Quantization::Fp8Cast);
  CHECK(parse_quantization("fp8-scaled-mm") == Quantization::Fp8ScaledMm);
  CHECK(std::string(quantization_name(Quantization::Fp8Cast)) == "fp8-cast");
  // Ours: auto (the default) and fp8.
  CHECK(parse_quantization("auto") == Quantization::Auto);
  CHECK(parse_quantization("fp8") == Quantization::Fp8);
  CHECK(std::string(quantization_name(Quantization::Fp8)) == "fp8");
  CHECK_THROWS_WITH(parse_quantization("nvfp4-cast"),
                    Contains("--quantization nvfp4-cast: NVFP4 needs Blackwell"));
  CHECK_THROWS_WITH(parse_quantization("int8"),
                    Contains("--quantization 'int8': expected auto, none, fp8, fp8-cast or fp8-scaled-mm"));
}

TEST_CASE("quantization: auto is none on the CPU whatever the checkpoint, other modes stay as asked") {
  for (bool fp8_checkpoint : {false, true}) {
    CHECK(resolve_quantization(Quantization::Auto, fp8_checkpoint, Device::cpu()) == Quantization::None);
    for (Quantization q :
         {Quantization::None, Quantization::Fp8, Quantization::Fp8Cast, Quantization::Fp8ScaledMm})
      CHECK(resolve_quantization(q, fp8_checkpoint, Device::cpu()) == q);
  }
  // Loading with auto on the CPU honours an FP8 file's scales in the compute dtype (none).
  const auto set = WeightSet::open({test::golden_dir("transformer_19b_fp8") + "/weights.safetensors"});
  const TransformerConfig config = TransformerConfig::parse(set->config().at("transformer"));
  const WeightView view(set, {"model.diffusion_model."}, "transformer");
  using models::transformer::TransformerWeights;
  const TransformerWeights w =
      TransformerWeights::load(view, config, DType::F32, Device::cpu(), Quantization::Auto);
  CHECK(w.blocks[0].video_self.to_q.weight.dtype() == DType::F32);
}

TEST_CASE("quantization: fp8-cast rounds the block linears of a prequantized transformer to F8_E4M3") {
  const auto set = WeightSet::open({test::golden_dir("transformer_19b_fp8") + "/weights.safetensors"});
  const TransformerConfig config = TransformerConfig::parse(set->config().at("transformer"));
  const WeightView view(set, {"model.diffusion_model."}, "transformer");
  using models::transformer::TransformerWeights;
  const TransformerWeights scaled = TransformerWeights::load(view, config);
  const TransformerWeights cast =
      TransformerWeights::load(view, config, DType::F32, Device::cpu(), Quantization::Fp8Cast);
  const auto fp8_exact = [](const Tensor& t) {
    for (float v : t.to_vector())
      if (f8e4m3_to_f32(f32_to_f8e4m3(v)) != v) return false;
    return true;
  };
  const Tensor& q_scaled = scaled.blocks[0].video_self.to_q.weight;
  const Tensor& q_cast = cast.blocks[0].video_self.to_q.weight;
  CHECK_FALSE(fp8_exact(q_scaled));  // float(w) x scale is not itself an FP8 value
  CHECK(fp8_exact(q_cast));
  CHECK(fp8_exact(cast.blocks[1].audio_ff.proj_out.weight));
  CHECK(fp8_exact(cast.blocks[0].video_text.to_out.bias));  // biases too
  // Each weight is float(w) x scale through bf16 into F8_E4M3.
  const std::vector<float> s = q_scaled.to_vector(), c = q_cast.to_vector();
  for (size_t i = 0; i < s.size(); ++i) REQUIRE(c[i] == f8e4m3_to_f32(f32_to_f8e4m3(round_bf16(s[i]))));
  // Linears outside the blocks stay as they are.
  CHECK(test::max_abs_diff(cast.video.patchify_proj.weight, scaled.video.patchify_proj.weight) == 0.f);
  // fp8-scaled-mm keeps the stored bytes and the scales instead.
  const TransformerWeights kept =
      TransformerWeights::load(view, config, DType::F32, Device::cpu(), Quantization::Fp8ScaledMm);
  const auto& q_kept = kept.blocks[0].video_self.to_q;
  REQUIRE(q_kept.weight.dtype() == DType::F8E4M3);
  REQUIRE(q_kept.input_scale.item() == 1.f);
  REQUIRE(test::max_abs_diff(q_kept.weight.to_scaled(DType::F32, q_kept.weight_scale.item()), q_scaled) ==
          0.f);
}
