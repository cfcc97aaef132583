// The VAE-side models placed as bf16 (weights, statistics, activations) run on the CPU too, where
// every op rounds its result to bf16 (ops/cpu/bf16_widening.h): the same code path the GPU runs,
// and the naive bf16 computation the GPU tests judge against. Each golden case must come out in
// bf16 and stay near the float32 fixture: max error at most kRelative of the output's largest
// magnitude (measured 2026-11-29: 0.013-0.029 for the VAEs, upsampler, audio decoder and HiFi-GAN
// vocoder; 0.059 for the BWE vocoder, whose float32 compute still sees the bf16-rounded STFT basis).
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "io/configs/audio_vae_config.h"
#include "io/configs/vocoder_config.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/upsampler/latent_upsampler.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/encoder.h"
#include "models/vocoder/vocoder.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

constexpr float kRelative = 0.1f;

struct Fixture {
  std::shared_ptr<SafetensorsFile> io;
  std::shared_ptr<const WeightSet> weights;
  explicit Fixture(const std::string& name) {
    io = SafetensorsFile::open(test::golden_dir(name) + "/io.safetensors");
    weights = WeightSet::open({test::golden_dir(name) + "/weights.safetensors"});
  }
  Tensor in(const std::string& key) const { return io->tensor(key).clone(); }
};

void check_near(const std::string& what, const Tensor& got, const Tensor& ref, DType dtype) {
  REQUIRE(got.dtype() == dtype);
  float range = 0;
  for (float v : ref.to_vector()) range = std::max(range, std::fabs(v));
  const float err = test::max_abs_diff(got.to(DType::F32), ref);
  INFO(what << ": bf16 error " << err << " of range " << range << " (" << err / range << ")");
  CHECK(err <= kRelative * range);
}

}  // namespace

TEST_CASE("bf16 placement: video VAE decoders and encoder on the CPU") {
  for (const std::string name : {"video_vae_decoder", "video_vae_decoder_tc"}) {
    const Fixture f(name);
    const auto decoder = video_vae::VideoDecoder::from_weights(f.weights, DType::BF16, Device::cpu());
    REQUIRE(decoder.dtype() == DType::BF16);
    Tensor latent = f.in("in.latent"), timestep;
    if (f.io->contains("in.latent_premixed")) latent = f.in("in.latent_premixed");
    if (f.io->contains("in.timestep")) timestep = f.in("in.timestep");
    check_near(name, decoder.decode(latent, timestep), f.in("out.video"), DType::BF16);
  }
  const Fixture f("video_vae_encoder");
  const auto encoder = video_vae::VideoEncoder::from_weights(f.weights, DType::BF16, Device::cpu());
  check_near("video_vae_encoder", encoder.encode(f.in("in.video")), f.in("out.latent"), DType::BF16);
}

TEST_CASE("bf16 placement: latent upsampler on the CPU") {
  const Fixture f("latent_upsampler_rational");
  const auto up = upsampler::LatentUpsampler::from_weights(f.weights, DType::BF16, Device::cpu());
  const video_vae::LatentStatistics stats(f.in("in.vae_mean_of_means").to(DType::BF16),
                                          f.in("in.vae_std_of_means").to(DType::BF16));
  check_near("latent_upsampler_rational", upsampler::upsample_video(up, f.in("in.latent"), stats),
             f.in("out.latent"), DType::BF16);
}

TEST_CASE("bf16 placement: audio VAE decoder and vocoders on the CPU (the BWE computes in float32)") {
  const Fixture a("audio_vae_decoder");
  const auto decoder =
      audio_vae::AudioDecoder::load(parse_audio_vae_decoder_config(a.weights->config().at("audio_vae")),
                                    a.weights, DType::BF16, Device::cpu());
  check_near("audio_vae_decoder", decoder.forward(a.in("in.latent")), a.in("out.mel"), DType::BF16);
  for (const std::string name : {"vocoder", "vocoder_bwe"}) {
    const Fixture f(name);
    const auto config = parse_vocoder_config(f.weights->config().at("vocoder"));
    const auto voc = vocoder::Vocoder::load(config, f.weights, DType::BF16, Device::cpu());
    check_near(name, voc.forward(f.in("in.mel")), f.in("out.waveform"),
               config.bwe ? DType::F32 : DType::BF16);
  }
}
