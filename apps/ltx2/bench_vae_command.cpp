// `ltx2 bench vae` (see bench_vae_command.h). The decoder is the real one's config (vae-audio.md
// §3, the LTX-2.0 or LTX-2.3 block lists; pipeline/random_model.h) built by its own loader over a
// WeightSynthesizer, every weight bf16 on the device; the latent is random bf16 on the device. Each decode is
// bracketed by device events; the median of --iterations after --warmup is reported, with the peak allocated
// device memory of that shape (weights included, as torch's max_memory_allocated counts them).
#include "bench_vae_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench_stats.h"
#include "bench_transformer_model.h"
#include "core/cuda/events.h"
#include "core/cuda/memory.h"
#include "core/error.h"
#include "io/configs/video_vae_config.h"
#include "io/weights.h"
#include "model_sets/random_model.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/diffusion_decoder.h"
#include "models/video_vae/diffusion_tiling.h"
#include "models/video_vae/tiled_decode.h"
#include "ops/conv3d.h"
#include "pipeline/residency.h"
#include "runtime/launcher.h"

namespace ltx2 {

namespace {

using bench_stats::gib;
using bench_stats::median;

using nlohmann::json;

// The checkpoints' metadata config["vae"] (vae-audio.md §3), as `ltx2 make-random` writes it.
json decoder_metadata(const std::string& model) {
  return {{"vae", model_sets::full_size_checkpoint_config(model == "2.0" ? "19b" : "22b").at("vae")}};
}

// The reference's measured ms (vae-audio.md §11, one H200, bf16); 0 where it has none.
double reference_ms(const std::string& model, const std::string& shape, bool tiled) {
  if (model == "2.3") return !tiled && shape == "stage1" ? 357 : 0;
  if (tiled) return shape == "stage1" ? 493 : 2470;
  return shape == "stage1" ? 409 : 1860;
}

// The convolution engine mode (LTX2_CONV) and what it means in this build; the engine each shape
// runs on is logged when that shape first runs.
const char* conv_engines_line() {
  if (ops::conv_engine() == ops::ConvEngine::Gemm) return "gemm (implicit GEMM only)";
  return ops::cudnn_conv_built() ? "cuDNN where it can run, else the implicit GEMM (one log line per shape)"
                                 : "implicit GEMM (this build has no cuDNN)";
}

// LTX-2.5's diffusion decoder: the reference configurator's defaults (the published checkpoint's
// config is not available here) with the values the checkpoints carry where the defaults differ
// (head_dim 64, t_emb_dim 384, one x0 step).
json diffusion_decoder_metadata() {
  json decoder = {{"head_dim", 64}, {"t_emb_dim", 384}, {"default_num_inference_steps", 1}};
  return {
      {"vae", {{"_class_name", "CausalDiffusionVAE"}, {"model_output_type", "x0"}, {"decoder", decoder}}}};
}

// What one bench row times: a decode of `latent` (frames x height x width pixels) on the device.
using DecodeFor =
    std::function<std::function<void()>(const Tensor& latent, int64_t frames, int64_t height, int64_t width)>;

}  // namespace

CLI::App* add_bench_vae_command(CLI::App* bench, BenchVaeOptions* opt) {
  auto* sub = bench->add_subcommand("vae",
                                    "One full-size video VAE decode (the real decoder config, random "
                                    "bf16 weights) at 512x768x121 and 1024x1536x121");
  sub->add_option("--model", opt->model,
                  "decoder config: 2.0 (LTX-2 19B), 2.3, or 2.5 (the diffusion decoder, the reference "
                  "configurator's defaults)")
      ->capture_default_str();
  sub->add_option(
      "--shape", opt->shapes,
      "stage1 (512x768x121, latent 16x16x24) and/or full (1024x1536x121, 16x32x48); default both");
  sub->add_option(
         "--tiling", opt->tiling,
         "none (one decode) or auto (the pipeline's tiles; 2.5: the tiles the free device memory allows)")
      ->check(CLI::IsMember({"none", "auto"}))
      ->capture_default_str();
  sub->add_option("--device", opt->device, "cuda:N")->capture_default_str();
  sub->add_option("--warmup", opt->warmup, "untimed decodes first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--iterations", opt->iterations, "timed decodes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--json", opt->json_path, "also write the results to this JSON file");
  return sub;
}

int run_bench_vae(const BenchVaeOptions& opt) {
  LTX2_CHECK(opt.model == "2.0" || opt.model == "2.3" || opt.model == "2.5",
             "ltx2 bench vae: --model must be 2.0, 2.3 or 2.5, got '{}'", opt.model);
  std::vector<bench_model::Shape3> shapes;
  for (const std::string& s : opt.shapes.empty() ? std::vector<std::string>{"stage1", "full"} : opt.shapes)
    shapes.push_back(bench_model::shape_named(s));
  const Device device = Device::parse(opt.device);
  LTX2_CHECK(device.is_cuda(), "ltx2 bench vae: --device must be a GPU (cuda:N), got '{}'", opt.device);
  LTX2_CHECK(cuda_built(), "ltx2 bench vae: this ltx2 was built without the CUDA backend");
  LTX2_CHECK(device.index < runtime::visible_gpu_count(),
             "ltx2 bench vae: no GPU {} is visible (CUDA_VISIBLE_DEVICES or driver)", opt.device);
  const bool tiled = opt.tiling == "auto";
  const bool diffusion = opt.model == "2.5";

  auto synth = std::make_shared<WeightSynthesizer>(11);
  std::unique_ptr<video_vae::VideoDecoder> conv;
  std::unique_ptr<video_vae::DiffusionVideoDecoder> diff;
  int64_t latent_channels = 0;
  DecodeFor decode_for;
  if (diffusion) {
    diff = std::make_unique<video_vae::DiffusionVideoDecoder>(
        DiffusionVideoDecoderConfig::from_metadata(diffusion_decoder_metadata()),
        WeightView(synth, "vae.decoder.", "video VAE decoder").placed(DType::BF16, device),
        WeightView(synth, "vae.per_channel_statistics.", "video VAE statistics"));
    latent_channels = diff->config().in_channels;
    // The pipeline's decode: tiles from the free device memory (auto) or one tile, its noise draws
    // random on the device.
    decode_for = [&](const Tensor& latent, int64_t frames, int64_t height, int64_t width) {
      video_vae::TileSizeConfig tiles;
      if (tiled)
        tiles = video_vae::recommend_diffusion_tiling(diff->config(), height, width, frames,
                                                      pipeline::device_bytes_available(device), 0);
      auto plan = std::make_shared<tiling::TilePlan>(diff->tile_plan(latent.shape(), tiles));
      auto noise = std::make_shared<std::vector<Tensor>>();
      uint64_t seed = 5;
      for (const Shape& shape : diff->noise_shapes(latent.shape(), *plan))
        noise->push_back(bench_model::random_bf16(shape, seed++, 1.f, device));
      std::printf("  %s: %zu tile(s), frames %lld/%lld, height %lld/%lld, width %lld/%lld px\n",
                  fmt::format("{}x{}x{}", height, width, frames).c_str(), plan->tiles.size(),
                  static_cast<long long>(tiles.frames.value), static_cast<long long>(tiles.frames.overlap),
                  static_cast<long long>(tiles.height.value), static_cast<long long>(tiles.height.overlap),
                  static_cast<long long>(tiles.width.value), static_cast<long long>(tiles.width.overlap));
      return std::function<void()>(
          [&, latent, plan, noise] { diff->decode(latent, *noise, *plan, [](const Tensor&) {}); });
    };
  } else {
    const VideoDecoderConfig config = VideoDecoderConfig::from_metadata(decoder_metadata(opt.model));
    conv = std::make_unique<video_vae::VideoDecoder>(
        config, WeightView(synth, "vae.decoder.", "video VAE decoder").placed(DType::BF16, device),
        WeightView(synth, "vae.per_channel_statistics.", "video VAE statistics"));
    latent_channels = config.latent_channels;
    decode_for = [&](const Tensor& latent, int64_t, int64_t height, int64_t width) {
      const video_vae::TileSizeConfig tiles =
          video_vae::TileSizeConfig::automatic(height, width, conv->config().scale_factors());
      return std::function<void()>([&, latent, tiles] {
        if (tiled)
          video_vae::tiled_decode(*conv, latent, tiles);
        else
          conv->decode(latent);
      });
    };
  }
  synth.reset();  // the host copies of the synthesized weights
  cuda_synchronize(device.index);
  const size_t weight_bytes = cuda_memory_stats(device.index).allocated;
  std::printf("ltx2 bench vae: LTX-%s %s, bf16 weights (%.2f GiB on %s), %s%s\n", opt.model.c_str(),
              diffusion ? "diffusion video decoder (CausalDiffusionVAE, configurator defaults, one x0 step)"
                        : "video decoder",
              gib(weight_bytes), opt.device.c_str(),
              tiled ? "the pipeline's automatic tiling" : "untiled (one decode of the whole latent)",
              diffusion ? "" : fmt::format(", convolutions: {}", conv_engines_line()).c_str());
  std::printf("%-7s %-18s %-15s %10s %9s %8s %9s\n", "shape", "video", "latent", "median ms", "peak GiB",
              "ref ms", "ours/ref");

  json rows = json::array();
  for (const bench_model::Shape3& shape : shapes) {
    const Shape latent_shape = {1, latent_channels, shape.frames, shape.height, shape.width};
    const Tensor latent = bench_model::random_bf16(latent_shape, 3, 1.f, device);
    // Both decoders scale latents by 8 x 32 x 32 (the first frame alone).
    const int64_t frames = 1 + 8 * (shape.frames - 1), height = shape.height * 32, width = shape.width * 32;
    const std::function<void()> decode = decode_for(latent, frames, height, width);
    cuda_synchronize(device.index);
    cuda_reset_peak_memory(device.index);
    cuda_time_each(device.index, opt.warmup, decode);
    const double ms = median(cuda_time_each(device.index, opt.iterations, decode));
    const size_t peak = cuda_memory_stats(device.index).peak_allocated;
    const double ref = diffusion ? 0 : reference_ms(opt.model, shape.name, tiled);
    const std::string video = fmt::format("{}x{}x{}", height, width, frames);
    const std::string lat = fmt::format("{}x{}x{}", shape.frames, shape.height, shape.width);
    std::printf("%-7s %-18s %-15s %10.1f %9.2f %8s %9s\n", shape.name.c_str(), video.c_str(), lat.c_str(), ms,
                gib(peak), ref > 0 ? fmt::format("{:.0f}", ref).c_str() : "-",
                ref > 0 ? fmt::format("{:.3f}", ms / ref).c_str() : "-");
    rows.push_back({{"shape", shape.name},
                    {"video", {frames, height, width}},
                    {"latent", {latent_channels, shape.frames, shape.height, shape.width}},
                    {"tiling", opt.tiling},
                    {"median_ms", ms},
                    {"peak_allocated_gib", gib(peak)},
                    {"weights_gib", gib(weight_bytes)},
                    {"reference_ms", ref > 0 ? json(ref) : json(nullptr)},
                    {"ratio_to_reference", ref > 0 ? json(ms / ref) : json(nullptr)}});
  }
  if (!opt.json_path.empty()) {
    json doc = {{"bench", "vae"},
                {"model", opt.model},
                {"device", opt.device},
                {"warmup", opt.warmup},
                {"iterations", opt.iterations},
                {"conv_engine", diffusion ? "none" : ops::conv_engine_name(ops::conv_engine())},
                {"weights", "synthesized (bf16) through the decoder's loader"},
                {"results", rows}};
    std::ofstream out(opt.json_path);
    LTX2_CHECK(out.good(), "ltx2 bench vae: cannot write --json file '{}'", opt.json_path);
    out << doc.dump(2) << "\n";
  }
  return 0;
}

}  // namespace ltx2
