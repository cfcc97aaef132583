// Sequence-parallel transformer on forked CPU ranks against the single-rank model: the golden
// transformer fixtures (2 heads) on 1 and 2 ranks, and a random 12-head model on 1 to 4 ranks,
// with token counts that need padding, a user attention mask and perturbations; and the
// guidance-branch executor (a step's passes spread over the ranks or over groups of them, each
// sequence parallel) against the same single rank.
#include <nlohmann/json.hpp>

#include "comm/shm_communicator.h"
#include "forked_ranks.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "model_sets/tiny_model.h"
#include "models/transformer/transformer.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "parallel/guidance_parallel.h"
#include "parallel/sequence_parallel.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::models::transformer;
using Catch::Matchers::Contains;

namespace {

constexpr float kMaxRelativeError = 1e-5f;

Modality fixture_modality(const SafetensorsFile& io, const std::string& stream) {
  return modality_from_fields([&](const std::string& name) -> Tensor {
    const std::string key = "in." + stream + "_" + name;
    return io.contains(key) ? io.tensor(key).clone() : Tensor();
  });
}

// The modality's first `tokens` video tokens.
Modality first_tokens(const Modality& m, int64_t tokens) {
  auto take = [&](const Tensor& x, int dim) {
    return x.defined() ? x.narrow(dim, 0, tokens).contiguous() : x;
  };
  Modality out = m;
  out.latent = take(m.latent, 1);
  out.timesteps = take(m.timesteps, 1);
  out.positions = take(m.positions, 2);
  out.keyframes_mask = take(m.keyframes_mask, 1);
  if (m.attention_mask.defined()) out.attention_mask = take(take(m.attention_mask, 1), 2);
  return out;
}

// max |got - expected| / max |expected|.
float relative_error(const Tensor& got, const Tensor& expected) {
  REQUIRE(got.shape() == expected.shape());
  return test::max_abs_diff(got, expected) / test::max_abs_diff(expected, Tensor::zeros(expected.shape()));
}

// Runs the SP transformer on `world` forked ranks; every rank's outputs must match `expected`.
void require_sp_matches(int world, const Transformer& model, const Modality& video, const Modality& audio,
                        const TransformerOutput& expected, const BatchedPerturbations& perturbations = {}) {
  const auto ranks = test::run_forked_ranks(world, [&](comm::Communicator& c) {
    parallel::SequenceParallelTransformer sp(model.config(), model.weights(), c);
    const TransformerOutput out = sp.forward(&video, &audio, perturbations);
    return test::RankTensors{{"video", out.video}, {"audio", out.audio}};
  });
  for (int r = 0; r < world; ++r) {
    INFO("world " << world << ", rank " << r << ": " << ranks[r].error);
    REQUIRE(ranks[r].error.empty());
    CHECK(relative_error(ranks[r].tensors.at("video"), expected.video) <= kMaxRelativeError);
    CHECK(relative_error(ranks[r].tensors.at("audio"), expected.audio) <= kMaxRelativeError);
  }
}

std::shared_ptr<const WeightSet> fixture_weights(const std::string& name) {
  return WeightSet::open({test::golden_dir(name) + "/weights.safetensors"});
}

// A random 2-layer model of the 22B layout (gated attention, cross-attention AdaLN) with 12 video
// and 12 audio heads, and inputs for it.
struct RandomCase {
  Transformer model;
  Modality video, audio;
};

Tensor token_positions(int64_t batch, int64_t axes, int64_t tokens) {
  Tensor p = Tensor::empty({batch, axes, tokens, 2});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t a = 0; a < axes; ++a)
      for (int64_t t = 0; t < tokens; ++t) {
        const float start = static_cast<float>((t * (a + 2)) % 7 + a);
        p.data<float>()[((b * axes + a) * tokens + t) * 2] = start;
        p.data<float>()[((b * axes + a) * tokens + t) * 2 + 1] = start + 1;
      }
  return p;
}

Modality random_modality(int64_t tokens, int64_t channels, int64_t axes, int64_t context_dim, uint64_t seed) {
  const int64_t B = 2, S = 6;
  Modality m;
  m.latent = test::random_tensor({B, tokens, channels}, seed);
  m.sigma = Tensor::from_vector({0.8f, 0.35f}, {B});
  m.timesteps = ops::unary(test::random_tensor({B, tokens, 1}, seed + 1), ops::UnaryOp::Abs);
  m.positions = token_positions(B, axes, tokens);
  m.context = test::random_tensor({B, S, context_dim}, seed + 2);
  m.context_mask = Tensor::from_vector_i64({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {B, S});
  return m;
}

RandomCase random_case(int64_t video_tokens) {
  nlohmann::json cfg = fixture_weights("transformer_22b")->config().at("transformer");
  cfg["num_attention_heads"] = 12;
  cfg["audio_num_attention_heads"] = 12;
  cfg["cross_attention_dim"] = 12 * cfg["attention_head_dim"].get<int64_t>();
  cfg["audio_cross_attention_dim"] = 12 * cfg["audio_attention_head_dim"].get<int64_t>();
  const TransformerConfig config = TransformerConfig::parse(cfg);
  auto synth = std::make_shared<WeightSynthesizer>(7);
  TransformerWeights weights =
      TransformerWeights::load(WeightView(synth, "model.diffusion_model.", "transformer"), config);
  Modality video = random_modality(video_tokens, config.video_in_channels, 3, config.video_dim(), 10);
  Modality audio = random_modality(5, config.audio_in_channels, 1, config.audio_dim(), 20);
  return {Transformer(config, std::move(weights)), std::move(video), std::move(audio)};
}

}  // namespace

TEST_CASE("sp: the transformer fixtures give the single-rank output on 1 and 2 ranks") {
  for (const char* name : {"transformer_19b", "transformer_22b", "transformer_25"}) {
    INFO(name);
    const Transformer model = Transformer::load(fixture_weights(name));
    auto io = SafetensorsFile::open(test::golden_dir(name) + "/io.safetensors");
    const Modality video = fixture_modality(*io, "video"), audio = fixture_modality(*io, "audio");
    const int64_t T = video.latent.size(1);
    REQUIRE(T % 2 == 0);
    for (int64_t tokens : {T, T - 1}) {  // T - 1: one padded token on 2 ranks
      INFO(tokens << " video tokens");
      const Modality v = first_tokens(video, tokens);
      const TransformerOutput expected = model.forward(&v, &audio);
      for (int world : {1, 2}) require_sp_matches(world, model, v, audio, expected);
    }
  }
}

// --quantization fp8 quantizes each token's activations with its own scale, so a shard of the tokens
// quantizes as the whole sequence does: the FP8 model's output on 2 ranks is the single rank's.
TEST_CASE("sp: under fp8 the FP8 fixtures give the single-rank output on 2 ranks") {
  for (const char* name : {"transformer_19b_fp8", "transformer_22b_fp8"}) {
    INFO(name);
    const Transformer model = Transformer::load(fixture_weights(name), std::make_shared<LocalAttention>(),
                                                DType::F32, Device::cpu(), Quantization::Fp8);
    REQUIRE(model.weights().blocks[0].video_self.to_q.weight.dtype() == DType::F8E4M3);
    auto io = SafetensorsFile::open(test::golden_dir(name) + "/io.safetensors");
    const Modality video = fixture_modality(*io, "video"), audio = fixture_modality(*io, "audio");
    const Modality v = first_tokens(video, video.latent.size(1) - 1);  // one padded token
    require_sp_matches(2, model, v, audio, model.forward(&v, &audio));
  }
}

TEST_CASE("sp: a random 12-head model gives the single-rank output on 1 to 4 ranks with padding") {
  const RandomCase c = random_case(13);  // pads by 1, 2 and 3 tokens on 2, 3 and 4 ranks
  const TransformerOutput expected = c.model.forward(&c.video, &c.audio);
  for (int world = 1; world <= 4; ++world) require_sp_matches(world, c.model, c.video, c.audio, expected);
}

TEST_CASE("sp: video-only and audio-only calls give the single-rank output on 2 ranks") {
  const RandomCase c = random_case(13);
  const TransformerOutput video_only = c.model.forward(&c.video, nullptr);
  const TransformerOutput audio_only = c.model.forward(nullptr, &c.audio);
  const auto ranks = test::run_forked_ranks(2, [&](comm::Communicator& comm) {
    parallel::SequenceParallelTransformer sp(c.model.config(), c.model.weights(), comm);
    return test::RankTensors{{"video", sp.forward(&c.video, nullptr).video},
                             {"audio", sp.forward(nullptr, &c.audio).audio}};
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << ranks[r].error);
    REQUIRE(ranks[r].error.empty());
    CHECK(relative_error(ranks[r].tensors.at("video"), video_only.video) <= kMaxRelativeError);
    CHECK(relative_error(ranks[r].tensors.at("audio"), audio_only.audio) <= kMaxRelativeError);
  }
}

TEST_CASE("sp: a user attention mask and perturbations survive the padding on 3 ranks") {
  RandomCase c = random_case(11);
  Tensor mask = ops::unary(test::random_tensor({2, 11, 11}, 3), ops::UnaryOp::Abs);
  mask.narrow(2, 4, 2).fill_(0.0f);  // tokens 4 and 5 are hidden from every query
  c.video.attention_mask = mask;
  const BatchedPerturbations perturbations({{{PerturbationType::SkipVideoSelfAttn, std::vector<int64_t>{1}}},
                                            {{PerturbationType::SkipV2ACrossAttn, std::nullopt}}},
                                           c.model.config().num_layers);
  const TransformerOutput expected = c.model.forward(&c.video, &c.audio, perturbations);
  require_sp_matches(3, c.model, c.video, c.audio, expected, perturbations);
}

TEST_CASE("sp: head counts the world size does not divide are refused before any collective") {
  const size_t bytes5 = comm::ShmCommunicator::region_bytes(5, 4096);
  std::vector<uint64_t> region5(bytes5 / 8 + 1);
  comm::ShmCommunicator::format_region(region5.data(), bytes5, 5, 4096);
  comm::ShmCommunicator comm5(region5.data(), bytes5, 0, std::chrono::milliseconds(100));
  const RandomCase c = random_case(4);
  REQUIRE_THROWS_WITH(parallel::SequenceParallelTransformer(c.model.config(), c.model.weights(), comm5),
                      Contains("video self-attention has 12 heads") && Contains("world size 5"));

  TransformerConfig audio_odd = c.model.config();
  audio_odd.audio_heads = 6;  // the 12 video heads divide over 4 ranks, the 6 audio heads do not
  const size_t bytes4 = comm::ShmCommunicator::region_bytes(4, 4096);
  std::vector<uint64_t> region4(bytes4 / 8 + 1);
  comm::ShmCommunicator::format_region(region4.data(), bytes4, 4, 4096);
  comm::ShmCommunicator comm4(region4.data(), bytes4, 0, std::chrono::milliseconds(100));
  REQUIRE_THROWS_WITH(parallel::SequenceParallelTransformer(audio_odd, c.model.weights(), comm4),
                      Contains("video-to-audio attention has 6 heads"));
  REQUIRE(comm5.collectives_entered() == 0);
  REQUIRE(comm4.collectives_entered() == 0);
}

TEST_CASE("sp: a batch over the token budget is refused before any collective") {
  const size_t bytes = comm::ShmCommunicator::region_bytes(1, 4096);
  std::vector<uint64_t> region(bytes / 8 + 1);
  comm::ShmCommunicator::format_region(region.data(), bytes, 1, 4096);
  comm::ShmCommunicator comm(region.data(), bytes, 0, std::chrono::milliseconds(100));
  const RandomCase c = random_case(13);  // batch 2: 26 tokens
  parallel::SequenceParallelTransformer sp(c.model.config(), c.model.weights(), comm, 25);
  REQUIRE_THROWS_WITH(sp.forward(&c.video, &c.audio),
                      Contains("26 video tokens") && Contains("max_tokens 25"));
  REQUIRE(comm.collectives_entered() == 0);
  parallel::SequenceParallelTransformer fits(c.model.config(), c.model.weights(), comm, 26);
  REQUIRE(fits.forward(&c.video, &c.audio).video.size(1) == 13);
}

TEST_CASE(
    "sp: the attention strategy refuses shards it was not told about and masks on video-to-audio, and drops "
    "padded keys") {
  const size_t bytes = comm::ShmCommunicator::region_bytes(1, 4096);
  std::vector<uint64_t> region(bytes / 8 + 1);
  comm::ShmCommunicator::format_region(region.data(), bytes, 1, 4096);
  comm::ShmCommunicator comm(region.data(), bytes, 0, std::chrono::milliseconds(100));
  parallel::SequenceParallelAttention attention(comm);
  const Tensor video = test::random_tensor({1, 6, 8}, 1), audio = test::random_tensor({1, 3, 8}, 2);
  REQUIRE_THROWS_WITH(
      attention.attend(AttentionSite::VideoSelf, video, video, video, 2, {}),
      Contains("video self-attention got 6 video tokens") && Contains("SequenceParallelTransformer"));
  attention.set_video_tokens(5, 6);
  REQUIRE_THROWS_WITH(
      attention.attend(AttentionSite::VideoToAudio, audio, video, video, 2, Tensor::zeros({1, 1, 3, 6})),
      Contains("video-to-audio attention takes no mask"));
  // With one rank the padded key is dropped: the result is local attention over the 5 real keys.
  const Tensor real = video.narrow(1, 0, 5).contiguous();
  const Tensor expected = LocalAttention().attend(AttentionSite::VideoToAudio, audio, real, real, 2, {});
  REQUIRE(test::max_abs_diff(attention.attend(AttentionSite::VideoToAudio, audio, video, video, 2, {}),
                             expected) == 0.0f);
  REQUIRE(attention.traffic().video_to_audio.calls == 1);
  REQUIRE(attention.traffic().video_to_audio.bytes_sent == 0);  // nothing leaves a single rank
}

namespace {

// The inputs the denoising loop builds (pipeline/denoise_stage.cpp): one sample, per-token
// timesteps denoise_mask * sigma as [1, T, 1], a keyframes mask [1, T, 1] (1 on the first frame),
// no context or attention mask.
Modality pipeline_modality(int64_t tokens, int64_t channels, int64_t axes, int64_t context_dim,
                           uint64_t seed) {
  const float sigma = 0.725f;
  Modality m;
  m.latent = test::random_tensor({1, tokens, channels}, seed);
  m.sigma = Tensor::full({1}, sigma);
  m.timesteps = Tensor::full({1, tokens, 1}, sigma);
  m.positions = token_positions(1, axes, tokens);
  m.context = test::random_tensor({1, 7, context_dim}, seed + 1);
  m.keyframes_mask = Tensor::zeros({1, tokens, 1});
  m.keyframes_mask.narrow(1, 0, tokens / 2).fill_(1.0f);  // the first latent frame
  return m;
}

}  // namespace

TEST_CASE("sp: the tiny model with the denoising loop's inputs is bit-exact on 3 ranks with padding") {
  const TransformerConfig config =
      TransformerConfig::parse(model_sets::tiny_checkpoint_config().at("transformer"));
  auto synth = std::make_shared<WeightSynthesizer>(11);
  const Transformer model(
      config, TransformerWeights::load(WeightView(synth, "model.diffusion_model.", "transformer"), config));
  const Modality audio = pipeline_modality(9, config.audio_in_channels, 1, config.caption_channels, 40);
  // 10 tokens pad to 12 (64x320, stage 1); 4 pad to 6, leaving the last rank only padding (64x128).
  for (int64_t tokens : {10, 4}) {
    INFO(tokens << " video tokens");
    const Modality video =
        pipeline_modality(tokens, config.video_in_channels, 3, config.caption_channels, 30);
    const TransformerOutput expected = model.forward(&video, &audio);
    const auto ranks = test::run_forked_ranks(3, [&](comm::Communicator& c) {
      parallel::SequenceParallelTransformer sp(model.config(), model.weights(), c);
      const TransformerOutput out = sp.forward(&video, &audio);
      return test::RankTensors{{"video", out.video}, {"audio", out.audio}};
    });
    for (int r = 0; r < 3; ++r) {
      INFO("rank " << r << ": " << ranks[r].error);
      REQUIRE(ranks[r].error.empty());
      CHECK(test::max_abs_diff(ranks[r].tensors.at("video"), expected.video) == 0.0f);
      CHECK(test::max_abs_diff(ranks[r].tensors.at("audio"), expected.audio) == 0.0f);
    }
  }
}

namespace {

// Four samples, as a guided step hands them over: two random cases' batches of 2 one after the
// other, each sample perturbed its own way (none, STG on block 1, the isolated-modality pass).
struct GuidedStep {
  RandomCase c;
  Modality video, audio;
  BatchedPerturbations perturbations;
};

Modality four_samples(const Modality& a, const Modality& b) {
  Modality out = a;
  for (Tensor Modality::*field : {&Modality::latent, &Modality::sigma, &Modality::timesteps,
                                  &Modality::positions, &Modality::context, &Modality::context_mask})
    out.*field = ops::cat({a.*field, b.*field}, 0);
  return out;
}

GuidedStep guided_step() {
  RandomCase c = random_case(13);
  const RandomCase other = random_case(13);
  Modality video = four_samples(
      c.video, random_modality(13, c.model.config().video_in_channels, 3, c.model.config().video_dim(), 50));
  Modality audio = four_samples(
      c.audio, random_modality(5, c.model.config().audio_in_channels, 1, c.model.config().audio_dim(), 60));
  const std::vector<Perturbation> isolated = {{PerturbationType::SkipA2VCrossAttn, std::nullopt},
                                              {PerturbationType::SkipV2ACrossAttn, std::nullopt}};
  BatchedPerturbations perturbations(
      {{}, {}, {{PerturbationType::SkipVideoSelfAttn, std::vector<int64_t>{1}}}, isolated},
      c.model.config().num_layers);
  return {std::move(c), std::move(video), std::move(audio), std::move(perturbations)};
}

// Samples 1 and 2 of a step (unconditional, perturbed): a step of 2 passes.
GuidedStep two_samples(const GuidedStep& s) {
  GuidedStep two{s.c, s.video, s.audio, s.perturbations.samples(1, 2)};
  for (Modality* m : {&two.video, &two.audio})
    for (Tensor Modality::*field : {&Modality::latent, &Modality::sigma, &Modality::timesteps,
                                    &Modality::positions, &Modality::context, &Modality::context_mask})
      m->*field = (m->*field).narrow(0, 1, 2).contiguous();
  return two;
}

}  // namespace

// Each rank runs its samples as one process would, with no collective inside the model, so the
// predictions are the single process's bit for bit.
TEST_CASE("guidance parallel: a step's 4 passes on 2 and 4 ranks give the single-rank output exactly") {
  const GuidedStep s = guided_step();
  const TransformerOutput expected = s.c.model.forward(&s.video, &s.audio, s.perturbations);
  for (int world : {2, 4}) {
    for (int max_batch : {1, 2}) {
      INFO("world " << world << ", --max-batch-size " << max_batch);
      const auto ranks =
          test::run_forked_grouped_ranks(world, [&](comm::Communicator& comm, comm::CommGroups& groups) {
            parallel::GuidanceParallelExecutor executor(comm, &groups);
            REQUIRE(executor.passes_per_call(max_batch) == 4);
            const TransformerOutput out = executor.forward(s.c.model, &s.video, &s.audio, s.perturbations);
            return test::RankTensors{
                {"video", out.video},
                {"audio", out.audio},
                {"collectives", Tensor::from_vector({float(comm.collectives_entered())}, {1})}};
          });
      for (int r = 0; r < world; ++r) {
        INFO("rank " << r << ": " << ranks[r].error);
        REQUIRE(ranks[r].error.empty());
        CHECK(test::max_abs_diff(ranks[r].tensors.at("video"), expected.video) == 0.0f);
        CHECK(test::max_abs_diff(ranks[r].tensors.at("audio"), expected.audio) == 0.0f);
        CHECK(ranks[r].tensors.at("collectives").item({0}) == 2.0f);  // one all-gather per stream
      }
    }
  }
}

TEST_CASE("guidance parallel: passes that do not divide over the ranks run sequence parallel") {
  const GuidedStep s = guided_step();
  // 4 samples on 3 ranks, and 3 of them (cond, uncond, perturbed) on 2, video only on 2.
  Modality three = s.video, three_audio = s.audio;
  for (Modality* m : {&three, &three_audio})
    for (Tensor Modality::*field : {&Modality::latent, &Modality::sigma, &Modality::timesteps,
                                    &Modality::positions, &Modality::context, &Modality::context_mask})
      m->*field = (m->*field).narrow(0, 0, 3).contiguous();
  const BatchedPerturbations three_p = s.perturbations.samples(0, 3);
  REQUIRE(three_p.batch() == 3);
  struct Case {
    int world;
    const Modality *video, *audio;
    const BatchedPerturbations* perturbations;
  };
  for (const Case& k : {Case{3, &s.video, &s.audio, &s.perturbations},
                        Case{2, &three, &three_audio, &three_p}, Case{2, &three, nullptr, &three_p}}) {
    INFO("world " << k.world << ", " << k.video->latent.size(0) << " samples"
                  << (k.audio ? "" : ", video only"));
    const TransformerOutput expected = s.c.model.forward(k.video, k.audio, *k.perturbations);
    const auto ranks =
        test::run_forked_grouped_ranks(k.world, [&](comm::Communicator& comm, comm::CommGroups& groups) {
          parallel::GuidanceParallelExecutor executor(comm, &groups);
          executor.passes_per_call(1);
          const TransformerOutput out = executor.forward(s.c.model, k.video, k.audio, *k.perturbations);
          test::RankTensors t{{"video", out.video}};
          if (k.audio) t["audio"] = out.audio;
          return t;
        });
    for (int r = 0; r < k.world; ++r) {
      INFO("rank " << r << ": " << ranks[r].error);
      REQUIRE(ranks[r].error.empty());
      CHECK(relative_error(ranks[r].tensors.at("video"), expected.video) <= kMaxRelativeError);
      if (k.audio) CHECK(relative_error(ranks[r].tensors.at("audio"), expected.audio) <= kMaxRelativeError);
    }
  }
}

TEST_CASE("guidance parallel: the groups are the most that divide the passes and the ranks and have a cut") {
  const auto any = [](int) { return true; };
  const auto none = [](int) { return false; };
  using E = parallel::GuidanceParallelExecutor;
  CHECK(E::groups_for(4, 4, none) == 4);  // one rank a group needs no cut
  CHECK(E::groups_for(4, 2, none) == 2);
  CHECK(E::groups_for(4, 8, any) == 4);  // 4 groups of 2
  CHECK(E::groups_for(4, 8, none) == 1);
  CHECK(E::groups_for(4, 8, [](int g) { return g == 2; }) == 2);  // only groups of 4 fit a node
  CHECK(E::groups_for(2, 4, any) == 2);
  CHECK(E::groups_for(3, 6, any) == 3);
  CHECK(E::groups_for(4, 6, any) == 2);  // 2 groups of 3 ranks, 2 passes each
  CHECK(E::groups_for(3, 2, any) == 1);
  CHECK(E::groups_for(4, 3, any) == 1);
  CHECK(E::groups_for(4, 1, any) == 1);
  CHECK(E::groups_for(1, 4, any) == 1);
}

// Groups of several ranks run their passes sequence parallel over their own communicators; the
// world sees only the step's one all-gather a stream.
TEST_CASE("guidance parallel: groups of ranks, each sequence parallel, give the single-rank output") {
  const GuidedStep s = guided_step();
  const GuidedStep two = two_samples(s);
  struct Case {
    int world, max_batch;
    const Modality *video, *audio;
    const BatchedPerturbations* perturbations;
  };
  // 2 passes on 4 ranks (2 groups of 2), 4 passes on 6 (2 groups of 3, 2 passes each, in calls of
  // 1 and of 2) and on 8 (4 groups of 2).
  for (const Case& k :
       {Case{4, 1, &two.video, &two.audio, &two.perturbations},
        Case{6, 1, &s.video, &s.audio, &s.perturbations}, Case{6, 2, &s.video, &s.audio, &s.perturbations},
        Case{8, 1, &s.video, &s.audio, &s.perturbations}}) {
    INFO("world " << k.world << ", " << k.video->latent.size(0) << " samples, --max-batch-size "
                  << k.max_batch);
    const TransformerOutput expected = s.c.model.forward(k.video, k.audio, *k.perturbations);
    const auto ranks =
        test::run_forked_grouped_ranks(k.world, [&](comm::Communicator& comm, comm::CommGroups& groups) {
          parallel::GuidanceParallelExecutor executor(comm, &groups);
          executor.passes_per_call(k.max_batch);
          const TransformerOutput out = executor.forward(s.c.model, k.video, k.audio, *k.perturbations);
          return test::RankTensors{
              {"video", out.video},
              {"audio", out.audio},
              {"collectives", Tensor::from_vector({float(comm.collectives_entered())}, {1})}};
        });
    for (int r = 0; r < k.world; ++r) {
      INFO("rank " << r << ": " << ranks[r].error);
      REQUIRE(ranks[r].error.empty());
      CHECK(relative_error(ranks[r].tensors.at("video"), expected.video) <= kMaxRelativeError);
      CHECK(relative_error(ranks[r].tensors.at("audio"), expected.audio) <= kMaxRelativeError);
      CHECK(ranks[r].tensors.at("collectives").item({0}) == 2.0f);
    }
  }
}

TEST_CASE("guidance parallel: a rank that fails inside a group fails every rank, none hangs") {
  const GuidedStep s = two_samples(guided_step());
  const auto ranks = test::run_forked_grouped_ranks(
      4,
      [&](comm::Communicator& comm, comm::CommGroups& groups) {
        if (comm.rank() == 3) throw Error("rank 3 gave up", __FILE__, __LINE__);
        parallel::GuidanceParallelExecutor executor(comm, &groups);
        executor.passes_per_call(1);
        executor.forward(s.c.model, &s.video, &s.audio, s.perturbations);  // 2 groups of 2 ranks
        return test::RankTensors{};
      },
      std::chrono::seconds(60));
  CHECK_THAT(ranks[3].error, Contains("rank 3 gave up"));
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    CHECK_THAT(ranks[r].error, Contains("communicator aborted: rank 3 failed"));  // released, not timed out
  }
}

TEST_CASE("guidance parallel: a --max-batch-size below 1 and samples past the batch are refused") {
  const size_t bytes = comm::ShmCommunicator::region_bytes(1, 4096);
  std::vector<uint64_t> region(bytes / 8 + 1);
  comm::ShmCommunicator::format_region(region.data(), bytes, 1, 4096);
  comm::ShmCommunicator comm(region.data(), bytes, 0, std::chrono::milliseconds(100));
  parallel::GuidanceParallelExecutor executor(comm, nullptr);
  REQUIRE_THROWS_WITH(executor.passes_per_call(0), Contains("--max-batch-size 0"));
  const BatchedPerturbations p({{}, {}}, 2);
  REQUIRE_THROWS_WITH(p.samples(1, 2), Contains("samples [1, 3) of a batch of 2"));
  REQUIRE(p.samples(1, 1).batch() == 1);
  REQUIRE(BatchedPerturbations().samples(0, 1).empty());
}
