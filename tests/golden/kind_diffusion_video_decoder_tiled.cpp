// Check runner for "diffusion_video_decoder_tiled" cases: the tiled decode of LTX-2.5's diffusion
// video decoder (the "models_from" case's weights). Per run of case.json "runs": its tile plan (every
// tile's stage-4 and pixel boxes, origin and trailing flags, masks mid.<run>.tile<i>.mask_{f,h,w},
// whether the masks are complementary), then the blended video out.<run>.video from the recorded
// noise (in.noise, or a single step's per-tile draws in.<run>.noise<i>). Then the recommended tiling
// of every "recommendations" entry (the tiny config and the full-size default one), or its refusal.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "golden/kinds.h"
#include "io/layout.h"
#include "models/video_vae/diffusion_decoder.h"
#include "models/video_vae/diffusion_tiling.h"
#include "ops/shape.h"

namespace ltx2::golden {

namespace {

using nlohmann::json;

// torch's vectorized linspace forms base + k * step with a fused multiply-add where the tiling's
// (tiling/mask.cpp) rounds the product first: a ramp value may differ by one float32 ulp.
const Tolerance kMaskTolerance{1.2e-7, 0.0};

video_vae::TileSizeConfig tiles_from(const json& j) {
  auto axis = [&](const char* name) {
    const auto v = j.at(name).get<std::vector<int64_t>>();
    return tiling::AxisTiling::by_size(v.at(0), v.at(1));
  };
  return {axis("frames"), axis("height"), axis("width")};
}

json tiles_json(const video_vae::TileSizeConfig& t) {
  auto axis = [](const tiling::AxisTiling& a) { return std::vector<int64_t>{a.value, a.overlap}; };
  return {{"frames", axis(t.frames)}, {"height", axis(t.height)}, {"width", axis(t.width)}};
}

Tensor ints(const std::vector<int64_t>& v) {
  return Tensor::from_vector_i64(v, {static_cast<int64_t>(v.size())}).to(DType::F32);
}

void check_plan(const std::string& run, const json& want, const tiling::TilePlan& plan, const GoldenCase& c,
                Report& report) {
  const json& tiles = want.at("tiles");
  if (tiles.size() != plan.tiles.size()) {
    report.fail(run + ".tiles",
                fmt::format("{} tiles, the reference has {}", plan.tiles.size(), tiles.size()));
    return;
  }
  std::vector<int64_t> got, expected;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const tiling::Tile& t = plan.tiles[i];
    for (int a = 0; a < 3; ++a) {
      got.insert(got.end(), {t.in[a].start, t.in[a].stop, t.out[a].start, t.out[a].stop});
      const auto in = tiles[i].at("in")[a].get<std::vector<int64_t>>();
      const auto out = tiles[i].at("out")[a].get<std::vector<int64_t>>();
      expected.insert(expected.end(), {in[0], in[1], out[0], out[1]});
    }
    got.insert(got.end(), {t.in[0].start == 0, t.in[0].stop == plan.in_extent[0]});
    expected.insert(expected.end(),
                    {tiles[i].at("is_origin").get<bool>(), tiles[i].at("pad_trailing").get<bool>()});
    const std::string prefix = "mid." + run + ".tile" + std::to_string(i) + ".mask_";
    for (int a = 0; a < 3; ++a) {
      const std::string name = prefix + "fhw"[a];
      if (!c.has(name)) continue;
      const auto n = static_cast<int64_t>(t.masks[a].size());
      Tensor expected = c.tensor(name);
      if (expected.numel() == 1) expected = expected.expand({n}).contiguous();  // an untiled axis: [1.0]
      report.check(name, Tensor::from_vector(t.masks[a], {n}), expected, kMaskTolerance);
    }
  }
  got.push_back(plan.masks_complementary);
  expected.push_back(want.at("masks_complementary").get<bool>());
  report.check(run + ".tiles (boxes, flags, complementary)", ints(got), ints(expected),
               parse_tolerance("exact"));
}

void run_diffusion_video_decoder_tiled(const GoldenCase& c, Report& report) {
  const json& s = c.spec();
  const Tolerance tol = parse_tolerance(s.at("tolerance"));
  const auto set =
      WeightSet::open({c.path("../" + s.at("models_from").get<std::string>() + "/weights.safetensors")});
  const DiffusionVideoDecoderConfig base = DiffusionVideoDecoderConfig::from_metadata(set->config());
  const Tensor latent = c.tensor("in.latent");

  for (const auto& [run, want] : s.at("runs").items()) {
    DiffusionVideoDecoderConfig config = base;
    config.num_inference_steps = want.at("steps").get<int64_t>();
    const video_vae::DiffusionVideoDecoder decoder(
        config, WeightView(set, component_prefixes(Component::VideoDecoder), "video VAE decoder"),
        WeightView(set, component_prefixes(Component::VideoStats), "video VAE statistics"));
    const tiling::TilePlan plan = decoder.tile_plan(latent.shape(), tiles_from(want.at("tiling")));
    check_plan(run, want, plan, c, report);
    if (plan.tiles.size() != want.at("tiles").size()) continue;
    std::vector<Tensor> noise;
    if (c.has("in." + run + ".noise0"))
      for (size_t i = 0; c.has("in." + run + ".noise" + std::to_string(i)); ++i)
        noise.push_back(c.tensor("in." + run + ".noise" + std::to_string(i)));
    else
      noise.push_back(c.tensor("in.noise"));
    std::vector<Tensor> chunks;
    decoder.decode(latent, noise, plan, [&](const Tensor& frames) { chunks.push_back(frames); });
    report.check("out." + run + ".video", ops::cat(chunks, 2), c.tensor("out." + run + ".video"), tol);
  }

  // The recommendation: tile sizes compared exactly, as {frames, height, width} x {size, overlap}.
  json full_metadata;
  full_metadata["vae"] = s.at("default_config");
  full_metadata["vae"]["_class_name"] = "CausalDiffusionVAE";
  const DiffusionVideoDecoderConfig full = DiffusionVideoDecoderConfig::from_metadata(full_metadata);
  for (const auto& [which, cases] : s.at("recommendations").items()) {
    const DiffusionVideoDecoderConfig& config = which == "tiny" ? base : full;
    for (size_t i = 0; i < cases.size(); ++i) {
      const json& r = cases[i];
      const std::string name = fmt::format("recommend.{}.{} ({}x{}x{}, {} bytes free)", which, i,
                                           r.at("height").get<int64_t>(), r.at("width").get<int64_t>(),
                                           r.at("frames").get<int64_t>(), r.at("free_bytes").get<uint64_t>());
      std::string got;
      try {
        got = tiles_json(video_vae::recommend_diffusion_tiling(
                             config, r.at("height").get<int64_t>(), r.at("width").get<int64_t>(),
                             r.at("frames").get<int64_t>(), r.at("free_bytes").get<uint64_t>(),
                             r.at("model_bytes").get<uint64_t>()))
                  .dump();
      } catch (const Error& e) {
        got = std::string("refused: ") + e.what();
      }
      const bool refused = r.contains("error");
      const std::string expected = refused ? std::string("refused") : r.at("tiling").dump();
      const bool ok = refused ? got.rfind("refused", 0) == 0 : got == expected;
      if (ok)
        report.check(name, ints({1}), ints({1}), parse_tolerance("exact"));
      else
        report.fail(name, fmt::format("got {}, the reference {}", got, expected));
    }
  }
}

const bool registered =
    register_kind_runner("diffusion_video_decoder_tiled", &run_diffusion_video_decoder_tiled);

}  // namespace

}  // namespace ltx2::golden
