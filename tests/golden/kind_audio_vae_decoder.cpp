// Check runner for `audio_vae_decoder` cases: builds the audio VAE decoder from the case's weights
// and metadata config["audio_vae"], decodes in.latent, and compares out.mel and every mid.* tensor
// the decoder reports under the same name.
#include <map>

#include "core/error.h"
#include "golden/kinds.h"
#include "io/configs/audio_vae_config.h"
#include "models/audio_vae/audio_decoder.h"

namespace ltx2::golden {

namespace {

void run_audio_vae_decoder(const GoldenCase& c, Report& report) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance").at("fp32_reference_vs_fp32_impl"));
  auto weights = c.weights();
  const nlohmann::json& config = weights->config();
  LTX2_CHECK(config.contains("audio_vae"), "{}: weights metadata config has no 'audio_vae'", c.dir());
  auto decoder =
      audio_vae::AudioDecoder::load(parse_audio_vae_decoder_config(config.at("audio_vae")), weights);

  std::map<std::string, Tensor> mids;
  Tensor mel = decoder.forward(c.tensor("in.latent"), [&](const std::string& name, const Tensor& value) {
    if (c.has("mid." + name)) mids[name] = value.clone();
  });
  report.check("out.mel", mel, c.tensor("out.mel"), tol);
  for (const std::string& name : c.names("mid.")) {
    auto it = mids.find(name.substr(4));
    if (it == mids.end()) {
      report.fail(name, "the decoder reported no such intermediate");
    } else {
      report.check(name, it->second, c.tensor(name), tol);
    }
  }
}

const bool registered = register_kind_runner("audio_vae_decoder", &run_audio_vae_decoder);

}  // namespace

}  // namespace ltx2::golden
