// Which video decoder a VAE set holds (models/video_vae/decoder_kind.h), the CausalDiffusionVAE
// layout's nested encoder config, and the residency estimate of the diffusion decoder's decode.
#include <nlohmann/json.hpp>

#include "io/configs/diffusion_video_decoder_config.h"
#include "io/configs/video_vae_config.h"
#include "io/safetensors.h"
#include "models/video_vae/decoder_kind.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/residency.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

std::shared_ptr<const WeightSet> golden_weights(const std::string& c) {
  return WeightSet::open({test::golden_dir(c) + "/weights.safetensors"});
}

// Every tensor of `set` written with `config` as its metadata config.
std::string rewrite_with_config(const WeightSet& set, const json& config, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& n : set.names()) tensors.push_back({n, set.raw(n)});
  write_safetensors(path, tensors, {{"config", config.dump()}});
  return path;
}

}  // namespace

TEST_CASE("video decoder kind: by vae._class_name, the weights agreeing") {
  REQUIRE(video_vae::video_decoder_kind(*golden_weights("diffusion_video_decoder")) ==
          video_vae::VideoDecoderKind::Diffusion);
  REQUIRE(video_vae::video_decoder_kind(*golden_weights("video_vae_decoder")) ==
          video_vae::VideoDecoderKind::Conv);
}

TEST_CASE(
    "video decoder kind: a config naming the other decoder than its weights is refused naming file and key") {
  test::ScratchDir dir("decoder_kind");
  const auto diffusion = golden_weights("diffusion_video_decoder");
  const auto conv = golden_weights("video_vae_decoder");

  // The diffusion decoder's config over the conv decoder's tensors.
  const std::string a = rewrite_with_config(*conv, diffusion->config(), dir.file("conv_keys.safetensors"));
  REQUIRE_THROWS_WITH(video_vae::video_decoder_kind(*WeightSet::open({a})),
                      Contains(a + ": metadata config vae._class_name is 'CausalDiffusionVAE'") &&
                          Contains("key 'vae.decoder.conv_in.conv.weight' is the conv decoder's") &&
                          Contains("no 'vae.decoder.conv_in_x_t.weight'"));
  // The conv VAE's config over the diffusion decoder's tensors.
  const std::string b =
      rewrite_with_config(*diffusion, conv->config(), dir.file("diffusion_keys.safetensors"));
  REQUIRE_THROWS_WITH(video_vae::video_decoder_kind(*WeightSet::open({b})),
                      Contains(b + ": metadata config vae._class_name is the conv VAE's") &&
                          Contains("key 'vae.decoder.conv_in_x_t.weight' is the diffusion video decoder's"));
  // An unknown class is refused naming the key.
  json other = diffusion->config();
  other["vae"]["_class_name"] = "SomethingElse";
  const std::string c = rewrite_with_config(*diffusion, other, dir.file("other.safetensors"));
  REQUIRE_THROWS_WITH(video_vae::video_decoder_kind(*WeightSet::open({c})), Contains("'_class_name'"));
}

TEST_CASE("video VAE encoder config: CausalDiffusionVAE's nested vae.encoder") {
  const json config = golden_weights("diffusion_video_decoder")->config();
  const VideoEncoderConfig e = VideoEncoderConfig::from_metadata(config);
  // The tiny case's encoder: 8 latent channels ("out_channels"), 5 blocks ("blocks"), "constant".
  REQUIRE(e.latent_channels == 8);
  REQUIRE(e.blocks.size() == 5);
  REQUIRE(e.latent_log_var == LatentLogVar::Constant);
  REQUIRE(e.conv_out_channels() == 9);
  REQUIRE(e.spatial_padding == SpatialPadding::Zeros);
  REQUIRE(e.scale_factors().height == 32);
  REQUIRE(e.scale_factors().time == 8);
  // The conv decoder's own config still refuses the class (the pipelines pick the diffusion decoder).
  REQUIRE_THROWS_WITH(VideoDecoderConfig::from_metadata(config), Contains("'_class_name'"));
  json bad = config;
  bad["vae"]["encoder"]["latent_log_var"] = "gaussian";
  REQUIRE_THROWS_WITH(VideoEncoderConfig::from_metadata(bad), Contains("'latent_log_var'"));
  bad = config;
  bad["vae"].erase("encoder");
  REQUIRE_THROWS_WITH(VideoEncoderConfig::from_metadata(bad), Contains("'encoder' is missing"));
}

TEST_CASE("residency: the diffusion decoder's decode estimate follows its stage-5 tokens") {
  const DiffusionVideoDecoderConfig real;  // the reference's default widths (the real checkpoint's)
  const uint64_t big = pipeline::diffusion_decode_activation_bytes(real, 1024, 1536, 121, DType::BF16);
  const uint64_t small = pipeline::diffusion_decode_activation_bytes(real, 512, 768, 121, DType::BF16);
  // Stage 5: 121 x 256 x 384 tokens x 128 x 2 bytes x 5 = 14.2 GiB; the pixels in float32 and bf16
  // 121 x 1024 x 1536 x 3 x 18 bytes = 9.6 GiB; stage-4 features (16 + 2 repeated latent frames:
  // 69 x 128 x 192) x 256 x 2 = 0.8 GiB; 1 GiB for the attention tiles: 25.56 GiB.
  const double gib = static_cast<double>(big) / static_cast<double>(1ull << 30);
  REQUIRE(gib > 25.5);
  REQUIRE(gib < 25.6);
  // A quarter of the pixels: about a quarter of the size-dependent bytes.
  REQUIRE(static_cast<double>(small - (1ull << 30)) < 0.26 * static_cast<double>(big - (1ull << 30)));
  REQUIRE(pipeline::diffusion_decode_activation_bytes(real, 1024, 1536, 121, DType::F32) > big);
}

TEST_CASE("residency: a diffusion-decoder set's weights and decode phase are the diffusion decoder's") {
  ModelPaths paths = test::diffusion_decoder_set_paths();
  pipeline::PipelineOptions options;
  options.load_text_encoder = false;
  const pipeline::ModelMemory memory = pipeline::model_memory(paths, options);
  REQUIRE(memory.diffusion_decoder.has_value());
  REQUIRE(memory.diffusion_decoder->in_channels == 128);
  // Every vae.decoder.* tensor and the statistics, as float32 on the CPU.
  const auto set = WeightSet::open({paths.video_vae});
  uint64_t want = 0;
  for (const std::string& n : set->names())
    if (n.rfind("vae.decoder.", 0) == 0 || n.rfind("vae.per_channel_statistics.", 0) == 0)
      want += static_cast<uint64_t>(shape_numel(set->info(n).shape)) * sizeof(float);
  REQUIRE(memory.weight_bytes[static_cast<size_t>(pipeline::ModelPart::VideoDecoder)] == want);
  pipeline::RequestShape shape;
  shape.height = 1024;
  shape.width = 1536;
  shape.num_frames = 121;
  const pipeline::ResidencyPlan plan = pipeline::plan_residency(memory, {shape}, ~uint64_t{0});
  bool found = false;
  for (const pipeline::PhaseMemory& p : plan.phases)
    if (p.phase == "decode") {
      found = true;
      REQUIRE(p.activation_bytes == pipeline::diffusion_decode_activation_bytes(*memory.diffusion_decoder,
                                                                                1024, 1536, 121, DType::F32));
    }
  REQUIRE(found);
}
