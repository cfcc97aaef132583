// The video VAE (decoder, timestep-conditioned decoder, tiled decode, encoder), the latent
// upsamplers, the audio VAE decoder and both vocoders in bf16 on the GPU against their golden
// fixtures (LTX-2.5's diffusion decoder's tiled decode against the CPU's float32 run), judged by the golden
// README's rule (gpu_compare.h check_bf16_rule: at most 2x the error of the naive bf16 computation, plus atol
// 1e-3). The naive computation is the same model placed as bf16 on the CPU: every CPU op widens its bf16
// operands, computes in float32 and rounds its result to bf16 (ops/cpu/bf16_widening.h), so every weight,
// input and intermediate is rounded as the reference's bf16 run rounds them. The BWE vocoder computes in
// float32 over bf16 weights in both.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gpu_compare.h"
#include "io/configs/audio_vae_config.h"
#include "io/configs/vocoder_config.h"
#include "io/layout.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/upsampler/latent_upsampler.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/diffusion_decoder.h"
#include "models/video_vae/encoder.h"
#include "models/video_vae/tiled_decode.h"
#include "models/vocoder/vocoder.h"
#include "ops/shape.h"
#include "support/test_util.h"

using namespace ltx2;
using test::check_bf16_rule;

namespace {

const Device kCpu = Device::cpu();

struct Case {
  std::string name;
  std::shared_ptr<SafetensorsFile> io;
  std::shared_ptr<const WeightSet> weights;
  nlohmann::json spec;
  explicit Case(const std::string& n) : name(n) {
    const std::string dir = test::golden_dir(n);
    io = SafetensorsFile::open(dir + "/io.safetensors");
    weights = WeightSet::open({dir + "/weights.safetensors"});
    std::ifstream in(dir + "/case.json");
    spec = nlohmann::json::parse(in);
  }
  Tensor in(const std::string& key) const { return io->tensor(key).clone(); }
};

// The model's output on the GPU must stay there, in bf16 (float32 for the BWE vocoder).
void require_on_gpu(const Tensor& t, DType dtype) {
  REQUIRE(t.device() == test::gpu());
  REQUIRE(t.dtype() == dtype);
}

void check_decoder(const std::string& name) {
  const Case c(name);
  INFO(name);
  const auto naive = video_vae::VideoDecoder::from_weights(c.weights, DType::BF16, kCpu);
  const auto gpu = video_vae::VideoDecoder::from_weights(c.weights, DType::BF16, test::gpu());
  Tensor latent = c.in("in.latent"), timestep;
  if (c.io->contains("in.latent_premixed")) latent = c.in("in.latent_premixed");
  if (c.io->contains("in.timestep")) timestep = c.in("in.timestep");
  const Tensor got = gpu.decode(latent, timestep.defined() ? timestep.to(test::gpu()) : timestep);
  require_on_gpu(got, DType::BF16);
  check_bf16_rule(name + " out.video", got, naive.decode(latent, timestep), c.in("out.video"));
}

}  // namespace

TEST_CASE("gpu: video VAE decoders (plain and timestep conditioned) in bf16 (2x rule)") {
  check_decoder("video_vae_decoder");
  check_decoder("video_vae_decoder_tc");
}

TEST_CASE("gpu: video VAE tiled decode in bf16 (2x rule), blended on the GPU") {
  const Case c("video_vae_tiled_decode");
  const auto naive = video_vae::VideoDecoder::from_weights(c.weights, DType::BF16, kCpu);
  const auto gpu = video_vae::VideoDecoder::from_weights(c.weights, DType::BF16, test::gpu());
  const nlohmann::json& t = c.spec.at("tiling_config");
  auto axis = [&](const char* a) {
    return video_vae::AxisTiling::by_size(t.at(a).value("tile_size", int64_t{0}),
                                          t.at(a).value("overlap", int64_t{0}));
  };
  const video_vae::TileSizeConfig tiles{axis("frames"), axis("height"), axis("width")};
  const Tensor latent = c.in("in.latent");
  const Tensor got = video_vae::tiled_decode(gpu, latent.to(test::gpu()), tiles);
  require_on_gpu(got, DType::F32);  // the blend buffers are float32
  check_bf16_rule("video_vae_tiled_decode out.video", got, video_vae::tiled_decode(naive, latent, tiles),
                  c.in("out.video"));
}

TEST_CASE("gpu: video VAE encoder in bf16 (2x rule), video and first frame") {
  const Case c("video_vae_encoder");
  const auto naive = video_vae::VideoEncoder::from_weights(c.weights, DType::BF16, kCpu);
  const auto gpu = video_vae::VideoEncoder::from_weights(c.weights, DType::BF16, test::gpu());
  const Tensor video = c.in("in.video");
  const Tensor got = gpu.encode(video);
  require_on_gpu(got, DType::BF16);
  check_bf16_rule("video_vae_encoder out.latent", got, naive.encode(video), c.in("out.latent"));
  if (c.io->contains("out.latent_first_frame"))
    check_bf16_rule("video_vae_encoder out.latent_first_frame", gpu.encode_image(video.slice(2, 0, 1)),
                    naive.encode_image(video.slice(2, 0, 1)), c.in("out.latent_first_frame"));
}

TEST_CASE("gpu: latent upsamplers (x2 and rational) in bf16 (2x rule)") {
  for (const std::string name : {"latent_upsampler", "latent_upsampler_rational"}) {
    INFO(name);
    const Case c(name);
    const auto naive = upsampler::LatentUpsampler::from_weights(c.weights, DType::BF16, kCpu);
    const auto gpu = upsampler::LatentUpsampler::from_weights(c.weights, DType::BF16, test::gpu());
    auto stats = [&](Device d) {
      return video_vae::LatentStatistics(c.in("in.vae_mean_of_means").to(DType::BF16).to(d),
                                         c.in("in.vae_std_of_means").to(DType::BF16).to(d));
    };
    const Tensor latent = c.in("in.latent");
    const Tensor got = upsampler::upsample_video(gpu, latent, stats(test::gpu()));
    require_on_gpu(got, DType::BF16);
    check_bf16_rule(name + " out.latent", got, upsampler::upsample_video(naive, latent, stats(kCpu)),
                    c.in("out.latent"));
  }
}

TEST_CASE("gpu: audio VAE decoder in bf16 (2x rule)") {
  const Case c("audio_vae_decoder");
  const auto config = parse_audio_vae_decoder_config(c.weights->config().at("audio_vae"));
  const auto naive = audio_vae::AudioDecoder::load(config, c.weights, DType::BF16, kCpu);
  const auto gpu = audio_vae::AudioDecoder::load(config, c.weights, DType::BF16, test::gpu());
  const Tensor latent = c.in("in.latent");
  const Tensor got = gpu.forward(latent);
  require_on_gpu(got, DType::BF16);
  check_bf16_rule("audio_vae_decoder out.mel", got, naive.forward(latent), c.in("out.mel"));
}

TEST_CASE("gpu: vocoders (HiFi-GAN in bf16, BigVGAN + BWE in float32 over bf16 weights) (2x rule)") {
  for (const std::string name : {"vocoder", "vocoder_bwe"}) {
    INFO(name);
    const Case c(name);
    const auto config = parse_vocoder_config(c.weights->config().at("vocoder"));
    const auto naive = vocoder::Vocoder::load(config, c.weights, DType::BF16, kCpu);
    const auto gpu = vocoder::Vocoder::load(config, c.weights, DType::BF16, test::gpu());
    const Tensor mel = c.in("in.mel");
    const Tensor got = gpu.forward(mel);
    require_on_gpu(got, config.bwe ? DType::F32 : DType::BF16);
    check_bf16_rule(name + " out.waveform", got, naive.forward(mel), c.in("out.waveform"));
  }
}

// LTX-2.5's diffusion video decoder (golden diffusion_video_decoder's weights) tiled 2 x 2 x 2 over
// a 17 x 96 x 96 video (the tiled golden case's plan "a"), with the config's 2 steps from one full
// noise draw and with a single x0 step (each tile its own draw): every tile's stage 4 and sampling
// loop and the blend on the GPU in bf16, against the CPU's float32 decode and its naive bf16 one
// (seeded latent and noise; the CPU path matches the reference's tiled decode in
// diffusion_video_decoder_tiled).
TEST_CASE("gpu: the diffusion video decoder's tiled decode in bf16, 2 steps and 1 (2x rule)") {
  const auto weights =
      WeightSet::open({test::golden_dir("diffusion_video_decoder") + "/weights.safetensors"});
  const Tensor latent = test::random_tensor({1, 8, 3, 3, 3}, 41);
  const video_vae::TileSizeConfig tiles{tiling::AxisTiling::by_size(16, 8),
                                        tiling::AxisTiling::by_size(64, 32),
                                        tiling::AxisTiling::by_size(64, 32)};
  for (const int64_t steps : {2, 1}) {
    DiffusionVideoDecoderConfig config = DiffusionVideoDecoderConfig::from_metadata(weights->config());
    config.num_inference_steps = steps;
    const auto make = [&](DType dtype, Device device) {
      return video_vae::DiffusionVideoDecoder(
          config,
          WeightView(weights, component_prefixes(Component::VideoDecoder), "video VAE decoder")
              .placed(dtype, device),
          WeightView(weights, component_prefixes(Component::VideoStats), "video VAE statistics"));
    };
    const auto gpu_decoder = make(DType::BF16, test::gpu());
    const tiling::TilePlan plan = gpu_decoder.tile_plan(latent.shape(), tiles);
    REQUIRE(plan.tiles.size() == 8);
    std::vector<Tensor> noise;
    uint64_t seed = 42;
    for (const Shape& shape : gpu_decoder.noise_shapes(latent.shape(), plan))
      noise.push_back(test::random_tensor(shape, seed++));
    REQUIRE(noise.size() == (steps == 2 ? 1u : 8u));
    const auto decode = [&](const video_vae::DiffusionVideoDecoder& d) {
      std::vector<Tensor> chunks;
      d.decode(latent, noise, plan, [&](const Tensor& f) { chunks.push_back(f.to(kCpu).to(DType::F32)); });
      return ops::cat(chunks, 2);
    };
    const Tensor gpu_video = decode(gpu_decoder);
    REQUIRE(gpu_video.shape() == Shape{1, 3, 17, 96, 96});
    check_bf16_rule(fmt::format("tiled diffusion decode, {} steps", steps), gpu_video,
                    decode(make(DType::BF16, kCpu)), decode(make(DType::F32, kCpu)));
  }
}
