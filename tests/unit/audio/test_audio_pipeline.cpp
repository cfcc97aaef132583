// The audio tail of the tiny distilled pipeline fixture: its stage-2 audio latent, decoded by the
// audio VAE decoder and the LTX-2.0 vocoder built from the monolith checkpoint (bf16 on disk, a
// different ladder than the audio_vae_decoder case: ch_mult 1,1,1 and one block per level), must
// reproduce the pipeline's mel and waveform.
#include <nlohmann/json.hpp>

#include "io/configs/audio_vae_config.h"
#include "io/configs/vocoder_config.h"
#include "io/safetensors.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/vocoder/vocoder.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("audio pipeline: the distilled fixture's stage-2 audio latent decodes to its mel and waveform") {
  const std::string dir = test::golden_dir("pipeline_distilled");
  auto weights = WeightSet::open({dir + "/checkpoint.safetensors"});
  auto io = SafetensorsFile::open(dir + "/io.safetensors");
  auto decoder = audio_vae::AudioDecoder::load(
      parse_audio_vae_decoder_config(weights->config().at("audio_vae")), weights);
  auto voc = vocoder::Vocoder::load(parse_vocoder_config(weights->config().at("vocoder")), weights);
  REQUIRE(voc.output_sampling_rate() == 24000);

  Tensor mel = decoder.forward(io->tensor("out.stage2.audio_latent").to(DType::F32));
  Tensor expected_mel = io->tensor("mid.audio.mel").to(DType::F32);
  REQUIRE(mel.shape() == expected_mel.shape());
  REQUIRE(test::max_abs_diff(mel, expected_mel) < 2e-3f);

  Tensor wave = voc.forward(mel);
  Tensor expected_wave = io->tensor("out.audio").to(DType::F32);
  REQUIRE(wave.shape() == Shape{1, 2, expected_wave.size(1)});
  REQUIRE(test::max_abs_diff(wave.squeeze(0), expected_wave) < 5e-3f);
}
