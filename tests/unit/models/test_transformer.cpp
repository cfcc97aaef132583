// The diffusion transformer: refusing bad checkpoints by name, the attention strategy seam,
// perturbation masks, and single-stream modes against the two-stream model with A<->V skipped.
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "io/safetensors.h"
#include "models/transformer/modules.h"
#include "models/transformer/transformer.h"
#include "ops/elementwise.h"
#include "support/catch.h"
#include "core/similarity.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::models::transformer;
using Catch::Matchers::Contains;

namespace {

const std::string kPrefix = "model.diffusion_model.";

std::string fixture_weights(const std::string& c) {
  return test::golden_dir(c) + "/weights.safetensors";
}

// Copies the 19B fixture's weights, dropping `drop` and replacing tensors in `replace`.
std::string modified_copy(const test::ScratchDir& dir, const std::string& drop,
                          const std::map<std::string, Tensor>& replace = {}) {
  auto src = SafetensorsFile::open(fixture_weights("transformer_19b"));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TensorInfo& info : src->tensors()) {
    if (info.name == drop) continue;
    auto it = replace.find(info.name);
    tensors.emplace_back(info.name, it != replace.end() ? it->second : src->tensor(info.name));
  }
  const std::string path = dir.file("weights.safetensors");
  write_safetensors(path, tensors, src->metadata());
  return path;
}

// Records which attention sites ran, then attends locally.
class RecordingAttention : public AttentionStrategy {
 public:
  Tensor attend(AttentionSite site, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                const Tensor& mask) const override {
    sites.insert(site);
    return LocalAttention().attend(site, q, k, v, heads, mask);
  }
  mutable std::set<AttentionSite> sites;
};

Modality modality(const SafetensorsFile& io, const std::string& s) {
  auto t = [&](const std::string& n) { return io.tensor("in." + s + "_" + n).clone(); };
  Modality m;
  m.latent = t("latent");
  m.sigma = t("sigma");
  m.timesteps = t("timesteps");
  m.positions = t("positions");
  m.context = t("context");
  return m;
}

}  // namespace

TEST_CASE("transformer: loading refuses a checkpoint with a missing tensor, naming it") {
  test::ScratchDir dir("transformer_missing");
  const std::string path = modified_copy(dir, kPrefix + "transformer_blocks.1.audio_attn2.to_k.weight");
  REQUIRE_THROWS_WITH(Transformer::load(WeightSet::open({path})),
                      Contains("model.diffusion_model.transformer_blocks.1.audio_attn2.to_k.weight"));
}

TEST_CASE("transformer: loading refuses a mis-shaped tensor, naming it and its shape") {
  test::ScratchDir dir("transformer_misshaped");
  const std::string name = kPrefix + "caption_projection.linear_1.weight";
  const std::string path = modified_copy(dir, "", {{name, Tensor::zeros({32, 25})}});
  REQUIRE_THROWS_WITH(Transformer::load(WeightSet::open({path})),
                      Contains(name) && Contains("[32, 25]") && Contains("[32, 24]"));
}

TEST_CASE("transformer: every fixture variant loads with its own config") {
  for (const char* c : {"transformer_19b", "transformer_19b_legacy", "transformer_22b", "transformer_22b_kv",
                        "transformer_25"}) {
    const Transformer model = Transformer::load(WeightSet::open({fixture_weights(c)}));
    REQUIRE(model.config().num_layers == static_cast<int64_t>(model.weights().blocks.size()));
  }
  const Transformer kv = Transformer::load(WeightSet::open({fixture_weights("transformer_22b_kv")}));
  REQUIRE(kv.config().cross_attention_adaln);
  REQUIRE_FALSE(kv.config().has_prompt_adaln());
  REQUIRE_FALSE(kv.weights().video.prompt_adaln.linear.weight.defined());
}

TEST_CASE("transformer: perturbation keep masks follow the per-sample lists") {
  const BatchedPerturbations p({{},
                                {{PerturbationType::SkipVideoSelfAttn, std::vector<int64_t>{1}}},
                                {{PerturbationType::SkipA2VCrossAttn, std::nullopt}}},
                               2);
  REQUIRE(p.mask().shape() == Shape{4, 2, 3});
  REQUIRE(p.keep(PerturbationType::SkipVideoSelfAttn, 1).to_vector() == std::vector<float>{1, 0, 1});
  REQUIRE_FALSE(p.any(PerturbationType::SkipVideoSelfAttn, 0));
  REQUIRE(p.any(PerturbationType::SkipA2VCrossAttn, 0));
  REQUIRE_FALSE(p.all(PerturbationType::SkipA2VCrossAttn, 0));
  REQUIRE_THROWS_WITH(
      BatchedPerturbations({{{PerturbationType::SkipAudioSelfAttn, std::vector<int64_t>{5}}}}, 2),
      Contains("block 5"));
  REQUIRE_THROWS_WITH(perturbation_type_from_name("SKIP_EVERYTHING"), Contains("SKIP_EVERYTHING"));
}

TEST_CASE("transformer: single-stream modes equal the two-stream model with A<->V skipped") {
  auto io = SafetensorsFile::open(test::golden_dir("transformer_22b") + "/io.safetensors");
  auto strategy = std::make_shared<RecordingAttention>();
  const Transformer model =
      Transformer::load(WeightSet::open({fixture_weights("transformer_22b")}), strategy);
  const Modality video = modality(*io, "video"), audio = modality(*io, "audio");
  const int64_t B = video.latent.size(0), L = model.config().num_layers;
  std::vector<std::vector<Perturbation>> no_cross(B, {{PerturbationType::SkipA2VCrossAttn, std::nullopt},
                                                      {PerturbationType::SkipV2ACrossAttn, std::nullopt}});
  const TransformerOutput both = model.forward(&video, &audio, BatchedPerturbations(no_cross, L));
  REQUIRE(strategy->sites.count(AttentionSite::AudioToVideo) == 0);

  strategy->sites.clear();
  const TransformerOutput video_only = model.forward(&video, nullptr);
  REQUIRE_FALSE(video_only.audio.defined());
  REQUIRE(strategy->sites == std::set<AttentionSite>{AttentionSite::VideoSelf, AttentionSite::VideoText});
  REQUIRE(test::max_abs_diff(video_only.video, both.video) == 0.0f);

  strategy->sites.clear();
  const TransformerOutput audio_only = model.forward(nullptr, &audio);
  REQUIRE(strategy->sites == std::set<AttentionSite>{AttentionSite::AudioSelf, AttentionSite::AudioText});
  REQUIRE(test::max_abs_diff(audio_only.audio, both.audio) == 0.0f);

  strategy->sites.clear();
  const TransformerOutput full = model.forward(&video, &audio);
  REQUIRE(strategy->sites.size() == 6);
  REQUIRE(test::max_abs_diff(full.video, both.video) > 0.0f);
}

TEST_CASE("transformer: a disabled stream keeps its hidden state but still feeds the other") {
  auto io = SafetensorsFile::open(test::golden_dir("transformer_19b") + "/io.safetensors");
  const Transformer model = Transformer::load(WeightSet::open({fixture_weights("transformer_19b")}));
  const Modality video = modality(*io, "video");
  Modality audio = modality(*io, "audio");
  audio.enabled = false;
  std::map<std::string, Tensor> probes;
  model.forward(&video, &audio, {}, [&](const std::string& n, const Tensor& t) { probes[n] = t.clone(); });
  REQUIRE(test::max_abs_diff(probes.at("block1.audio_x"), probes.at("audio.proj_in")) == 0.0f);
  const TransformerOutput video_only = model.forward(&video, nullptr);
  const TransformerOutput with_audio = model.forward(&video, &audio);
  REQUIRE(test::max_abs_diff(with_audio.video, video_only.video) > 0.0f);
}

TEST_CASE("transformer: the timestep sinusoid is [cos | sin] of t * exp(-ln(10000) j / 128)") {
  const Tensor s = timestep_sinusoid(Tensor::from_vector({0.0f, 800.0f}, {2}));
  REQUIRE(s.shape() == Shape{2, 256});
  REQUIRE(s.item({0, 0}) == 1.0f);
  REQUIRE(s.item({0, 128}) == 0.0f);
  REQUIRE(s.item({1, 0}) == std::cos(800.0f));
  REQUIRE(s.item({1, 128}) == std::sin(800.0f));
  const float f5 = std::exp((5.0f * static_cast<float>(-std::log(10000.0))) / 128.0f);
  REQUIRE(s.item({1, 5}) == std::cos(800.0f * f5));
}

TEST_CASE("transformer: a self-attention mask of ones changes nothing, a zero column masks a key") {
  auto io = SafetensorsFile::open(test::golden_dir("transformer_22b") + "/io.safetensors");
  const Transformer model = Transformer::load(WeightSet::open({fixture_weights("transformer_22b")}));
  Modality video = modality(*io, "video");
  const int64_t B = video.latent.size(0), T = video.latent.size(1);
  const TransformerOutput plain = model.forward(&video, nullptr);
  video.attention_mask = Tensor::full({B, T, T}, 1.0f);
  // Not bit-equal: ops::attention's masked and unmasked paths round differently (about 1e-6).
  REQUIRE(test::max_abs_diff(model.forward(&video, nullptr).video, plain.video) < 1e-5f);
  video.attention_mask.select(2, 5).fill_(0.0f);  // no query may attend to token 5
  REQUIRE(test::max_abs_diff(model.forward(&video, nullptr).video, plain.video) > 1e-4f);
}

namespace {

// Each stream's output of `model` on the fixture's inputs against `dequantized`'s (the float32
// forward with the scales honoured), printed for the record under `mode`.
std::vector<std::pair<const char*, Similarity>> errors_against(const std::string& fixture,
                                                                     const Transformer& model,
                                                                     const Transformer& dequantized,
                                                                     const char* mode) {
  auto io = SafetensorsFile::open(test::golden_dir(fixture) + "/io.safetensors");
  const Modality video = modality(*io, "video"), audio = modality(*io, "audio");
  const TransformerOutput want = dequantized.forward(&video, &audio), got = model.forward(&video, &audio);
  std::vector<std::pair<const char*, Similarity>> out = {
      {"video", similarity(got.video, want.video)}, {"audio", similarity(got.audio, want.audio)}};
  for (const auto& [name, sim] : out)
    std::printf("%s %s %s: rel_l2 %.4f, cosine %.6f\n", fixture.c_str(), mode, name, sim.rel_l2, sim.cosine);
  return out;
}

}  // namespace

// fp8-scaled-mm on the prequantized fixtures: the block linears stay F8_E4M3 (a quarter of their
// float32 bytes) and multiply FP8 activations; measured against the float32 forward with the
// scales honoured (the fixtures' own semantics). Their input scales are 1.0, so activations keep
// e4m3's 3 mantissa bits at their own magnitude and the small ones fall into its subnormals.
// Measured (2026-12-02): rel_l2 1.9% / 1.1% (19B video / audio), 3.7% / 4.1% (22B), cosine >= 0.9991.
TEST_CASE(
    "transformer: fp8-scaled-mm keeps the FP8 linears in F8_E4M3 and stays near the dequantized forward") {
  for (const char* c : {"transformer_19b_fp8", "transformer_22b_fp8"}) {
    INFO(c);
    auto set = WeightSet::open({fixture_weights(c)});
    const Transformer dequantized = Transformer::load(set);
    const Transformer fp8 = Transformer::load(set, std::make_shared<LocalAttention>(), DType::F32,
                                              Device::cpu(), Quantization::Fp8ScaledMm);
    const BlockWeights& b = fp8.weights().blocks[0];
    REQUIRE(b.video_self.to_q.fp8());
    REQUIRE(b.video_ff.proj_in.fp8());
    REQUIRE(b.video_self.to_q.weight_scale.item() ==
            set->raw(kPrefix + "transformer_blocks.0.attn1.to_q.weight_scale").item());
    REQUIRE_FALSE(fp8.weights().video.patchify_proj.fp8());
    REQUIRE_FALSE(dequantized.weights().blocks[0].video_self.to_q.fp8());
    for (const auto& [name, sim] : errors_against(c, fp8, dequantized, "fp8-scaled-mm")) {
      INFO(name << ": rel_l2 " << sim.rel_l2 << ", cosine " << sim.cosine);
      REQUIRE(sim.rel_l2 < 0.06);
      REQUIRE(sim.cosine > 0.998);
      REQUIRE(sim.rel_l2 > 0);  // the activations really were quantized
    }
  }
}

// fp8 (ours) on the prequantized fixtures and on bf16 ones: every block linear in F8_E4M3 with a
// scale per output channel (an FP8 checkpoint's bytes and scale kept; a bf16 one's quantized at load)
// and each token's activations with its own scale. Against the float32 forward with the scales
// honoured (the target: rel_l2 <= 3%, cosine >= 0.999), measured (2026-12-03, CPU):
//   19b_fp8 1.81% / 1.03% (video / audio), 22b_fp8 3.14% / 3.14%, cosine >= 0.99950;
//   19b (bf16, quantized at load) 2.35% / 1.62%; 22b 5.16% / 6.36%, cosine 0.99885 / 0.99799.
// The 19B cases meet the target, the 22B ones do not: the error is e4m3's 3 mantissa bits on both
// operands, spread over the linears (keeping any one kind of them in float32 takes 22b_fp8's video
// only to 2.51-3.08%) and not the scaling (32-element activation blocks instead of rows: 2.85%).
// Bounds: the measured values with a tenth of margin.
TEST_CASE(
    "transformer: fp8 holds the block linears per channel, quantizes tokens on the fly, and stays "
    "near the float32 forward") {
  struct Bound {
    const char* fixture;
    double rel_l2, cosine;
  };
  for (const auto& [c, max_rel_l2, min_cosine] :
       {Bound{"transformer_19b_fp8", 0.02, 0.9998}, Bound{"transformer_22b_fp8", 0.035, 0.9994},
        Bound{"transformer_19b", 0.026, 0.9997}, Bound{"transformer_22b", 0.07, 0.9977}}) {
    INFO(c);
    auto set = WeightSet::open({fixture_weights(c)});
    const Transformer dequantized = Transformer::load(set);
    const Transformer fp8 = Transformer::load(set, std::make_shared<LocalAttention>(), DType::F32,
                                              Device::cpu(), Quantization::Fp8);
    const BlockWeights& b = fp8.weights().blocks[0];
    for (const LinearWeights* l : {&b.video_self.to_q, &b.video_self.to_out, &b.audio_ff.proj_out}) {
      REQUIRE(l->fp8());
      REQUIRE_FALSE(l->input_scale.defined());
      REQUIRE(l->weight_scale.shape() == Shape{l->weight.size(0)});
    }
    REQUIRE_FALSE(fp8.weights().video.patchify_proj.fp8());
    const std::string q_name = kPrefix + "transformer_blocks.0.attn1.to_q.weight";
    if (set->contains(kPrefix + "transformer_blocks.0.attn1.to_q.weight_scale")) {
      // The checkpoint's bytes, its one scale given to every channel.
      REQUIRE(test::max_abs_diff(b.video_self.to_q.weight.to(DType::F32), set->raw(q_name).to(DType::F32)) ==
              0);
      const float scale = set->raw(kPrefix + "transformer_blocks.0.attn1.to_q.weight_scale").item();
      REQUIRE(b.video_self.to_q.weight_scale.to_vector() ==
              std::vector<float>(static_cast<size_t>(b.video_self.to_q.weight.size(0)), scale));
    } else {
      // Quantized at load: within half an e4m3 step (1/16 of the value) of the weight, per channel.
      const Tensor value =
          ops::mul(b.video_self.to_q.weight.to(DType::F32), b.video_self.to_q.weight_scale.view({-1, 1}));
      const Tensor want = dequantized.weights().blocks[0].video_self.to_q.weight;
      REQUIRE(test::max_abs_diff(value, want) <= 0.0625f * test::max_abs_diff(want, ops::mul(want, 0.f)));
    }
    for (const auto& [name, sim] : errors_against(c, fp8, dequantized, "fp8")) {
      INFO(name << ": rel_l2 " << sim.rel_l2 << ", cosine " << sim.cosine);
      REQUIRE(sim.rel_l2 <= max_rel_l2);
      REQUIRE(sim.cosine >= min_cosine);
      REQUIRE(sim.rel_l2 > 0);  // the activations really were quantized
    }
  }
}

TEST_CASE(
    "transformer: per-channel FP8 quantization maps each row's max|w| to 448 and refuses a weight that "
    "is not finite") {
  const Fp8Weight q =
      quantize_f8e4m3_per_channel(Tensor::from_vector({1.f, -2.f, 0.f, 0.f, 3.f, 0.5f}, {3, 2}), "w");
  REQUIRE(q.weight.dtype() == DType::F8E4M3);
  REQUIRE(q.scale.shape() == Shape{3});
  // Row scales 2/448, 1 (a zero row), 3/448: the rows' largest magnitudes become 448 exactly.
  REQUIRE(q.scale.to_vector() == std::vector<float>{2.f * (1.f / 448.f), 1.f, 3.f * (1.f / 448.f)});
  const std::vector<float> codes = q.weight.to(DType::F32).to_vector();
  REQUIRE(codes[1] == -448.f);
  REQUIRE(codes[2] == 0.f);
  REQUIRE(codes[3] == 0.f);
  REQUIRE(codes[4] == 448.f);
  REQUIRE_THROWS_WITH(quantize_f8e4m3_per_channel(Tensor::from_vector({1.f, NAN}, {1, 2}), "blocks.0.to_k"),
                      Contains("blocks.0.to_k") && Contains("not finite"));
}

TEST_CASE("transformer: fp8-scaled-mm refuses a bf16 checkpoint and an FP8 linear without its input scale") {
  REQUIRE_THROWS_WITH(Transformer::load(WeightSet::open({fixture_weights("transformer_19b")}),
                                        std::make_shared<LocalAttention>(), DType::F32, Device::cpu(),
                                        Quantization::Fp8ScaledMm),
                      Contains("fp8-scaled-mm") && Contains("fp8-cast"));
  test::ScratchDir dir("transformer_fp8_no_input_scale");
  auto src = SafetensorsFile::open(fixture_weights("transformer_19b_fp8"));
  const std::string dropped = kPrefix + "transformer_blocks.1.ff.net.2.input_scale";
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TensorInfo& info : src->tensors())
    if (info.name != dropped) tensors.emplace_back(info.name, src->tensor(info.name));
  const std::string path = dir.file("weights.safetensors");
  write_safetensors(path, tensors, src->metadata());
  // The file itself is well formed (the scales honoured need no input scale) ...
  REQUIRE_NOTHROW(Transformer::load(WeightSet::open({path})));
  // ... but the FP8 GEMM needs it, and the error names the linear.
  REQUIRE_THROWS_WITH(Transformer::load(WeightSet::open({path}), std::make_shared<LocalAttention>(),
                                        DType::F32, Device::cpu(), Quantization::Fp8ScaledMm),
                      Contains("transformer_blocks.1.ff.net.2") && Contains("input_scale"));
}

TEST_CASE(
    "transformer: per-tensor FP8 quantization maps max|w| to 448 and refuses a weight that is not finite") {
  const Fp8Weight q = quantize_f8e4m3_per_tensor(Tensor::from_vector({1.f, -2.f, 4.f, 0.5f}, {2, 2}), "w");
  REQUIRE(q.weight.dtype() == DType::F8E4M3);
  // s = 448 / 4 = 112: 112, -224, 448 and 56 are e4m3 values, so the codes hold them exactly.
  REQUIRE(q.weight.to(DType::F32).to_vector() == std::vector<float>{112.f, -224.f, 448.f, 56.f});
  REQUIRE(q.scale.numel() == 1);
  REQUIRE(q.scale.item() == 1.f / 112.f);
  // An all-zero weight keeps the scale 1.
  REQUIRE(quantize_f8e4m3_per_tensor(Tensor::zeros({2, 2}), "zero").scale.item() == 1.f);
  REQUIRE_THROWS_WITH(quantize_f8e4m3_per_tensor(Tensor::from_vector({1.f, NAN}, {2}), "blocks.0.to_q"),
                      Contains("blocks.0.to_q") && Contains("not finite"));
  REQUIRE_THROWS_WITH(quantize_f8e4m3_per_tensor(Tensor::from_vector({INFINITY, 1.f}, {2}), "w"),
                      Contains("not finite"));
}
