// golden_check's runner for "transformer" cases: builds the model from the case's weights and
// metadata config, runs LTXModel.forward on the case's modalities (and per-sample perturbations),
// and compares velocities, x0 = latent - v * t, the guided x0 of guided cases, and every mid.*
// intermediate the model reports. "transformer_fp8" cases are the same on a prequantized FP8 file,
// loaded under the case's quantization.policy (null: the scales honoured; "fp8-cast").
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "core/error.h"
#include "golden/kinds.h"
#include "models/transformer/transformer.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ltx2::golden {

namespace {

using nlohmann::json;
namespace tr = models::transformer;

tr::Modality read_modality(const GoldenCase& c, const json& fields) {
  tr::Modality m = tr::modality_from_fields([&](const std::string& key) -> Tensor {
    if (!fields.contains(key) || fields.at(key).is_null()) return {};
    return c.tensor(fields.at(key).get<std::string>());
  });
  m.enabled = fields.value("enabled", true);
  return m;
}

tr::BatchedPerturbations read_perturbations(const json& spec, int64_t num_blocks) {
  if (!spec.contains("perturbations_per_sample") || spec.at("perturbations_per_sample").is_null()) return {};
  std::vector<std::vector<tr::Perturbation>> samples;
  for (const json& sample : spec.at("perturbations_per_sample")) {
    std::vector<tr::Perturbation> list;
    for (const json& p : sample) {
      tr::Perturbation item{tr::perturbation_type_from_name(p.at("type").get<std::string>()), std::nullopt};
      if (!p.at("blocks").is_null()) item.blocks = p.at("blocks").get<std::vector<int64_t>>();
      list.push_back(item);
    }
    samples.push_back(std::move(list));
  }
  return tr::BatchedPerturbations(samples, num_blocks);
}

// torch.std over the whole tensor (unbiased).
float std_all(const Tensor& x) {
  const Tensor flat = x.reshape({x.numel()});
  const Tensor centred = ops::sub(flat, ops::mean(flat, 0, true));
  const float ss = ops::sum(ops::mul(centred, centred), 0).item();
  return std::sqrt(ss / static_cast<float>(x.numel() - 1));
}

// MultiModalGuider.calculate on the four passes (rows cond, uncond, perturbed, isolated-modality).
Tensor guided(const Tensor& x0, const json& params) {
  const Tensor c = x0.narrow(0, 0, 1), u = x0.narrow(0, 1, 1), p = x0.narrow(0, 2, 1), m = x0.narrow(0, 3, 1);
  const float cfg = params.value("cfg_scale", 1.0f), stg = params.value("stg_scale", 0.0f);
  const float mod = params.value("modality_scale", 1.0f), rescale = params.value("rescale_scale", 0.0f);
  Tensor pred = ops::add(c, ops::mul(ops::sub(c, u), cfg - 1.0f));
  pred = ops::add(pred, ops::mul(ops::sub(c, p), stg));
  pred = ops::add(pred, ops::mul(ops::sub(c, m), mod - 1.0f));
  if (rescale != 0.0f) pred = ops::mul(pred, rescale * std_all(c) / std_all(pred) + (1.0f - rescale));
  return pred;
}

void run_transformer(const GoldenCase& c, Report& report) {
  const json& spec = c.spec();
  const json& tol = spec.at("tolerances").at("fp32_impl");
  const Tolerance out_tol = parse_tolerance(tol.at("out"));
  const Tolerance mid_tol = tol.contains("mid") ? parse_tolerance(tol.at("mid")) : out_tol;
  const Tolerance rope_tol = tol.contains("rope_tables") ? parse_tolerance(tol.at("rope_tables")) : mid_tol;

  Quantization quantization = Quantization::None;
  if (spec.contains("quantization") && spec.at("quantization").value("policy", nlohmann::json()).is_string())
    quantization = parse_quantization(spec.at("quantization").at("policy").get<std::string>());
  const tr::Transformer model = tr::Transformer::load(c.weights(), std::make_shared<tr::LocalAttention>(),
                                                      DType::F32, Device::cpu(), quantization);
  const json& fields = spec.at("modality_fields");
  std::optional<tr::Modality> video, audio;
  if (fields.contains("video") && !fields.at("video").is_null()) video = read_modality(c, fields.at("video"));
  if (fields.contains("audio") && !fields.at("audio").is_null()) audio = read_modality(c, fields.at("audio"));
  const tr::BatchedPerturbations perturbations = read_perturbations(spec, model.config().num_layers);
  if (!perturbations.empty() && c.has("in.perturbation_keep_mask"))
    report.check("in.perturbation_keep_mask", perturbations.mask(), c.tensor("in.perturbation_keep_mask"),
                 Tolerance{});

  std::map<std::string, Tensor> mids;
  const tr::TransformerOutput out =
      model.forward(video ? &*video : nullptr, audio ? &*audio : nullptr, perturbations,
                    [&](const std::string& name, const Tensor& t) {
                      if (c.has("mid." + name)) mids[name] = t.contiguous();
                    });

  std::map<std::string, Tensor> results;
  if (video) {
    results["video"] = out.video;
    results["video_x0"] = tr::denoised_from_velocity(video->latent, out.video, video->timesteps);
  }
  if (audio) {
    results["audio"] = out.audio;
    results["audio_x0"] = tr::denoised_from_velocity(audio->latent, out.audio, audio->timesteps);
  }
  if (spec.contains("guider") && !spec.at("guider").is_null()) {
    const json& g = spec.at("guider");
    if (video) results["video_guided_x0"] = guided(results["video_x0"], g.at("video_params"));
    if (audio) results["audio_guided_x0"] = guided(results["audio_x0"], g.at("audio_params"));
  }
  for (const std::string& name : c.names("out.")) {
    auto it = results.find(name.substr(4));
    if (it == results.end()) {
      report.fail(name, "no such transformer output");
      continue;
    }
    report.check(name, it->second, c.tensor(name), out_tol);
  }
  for (const std::string& name : c.names("mid.")) {
    auto it = mids.find(name.substr(4));
    if (it == mids.end()) {
      report.fail(name, "not formed by this implementation");
      continue;
    }
    const bool rope = name.find("rope_") != std::string::npos || name.find("freq_grid") != std::string::npos;
    report.check(name, it->second, c.tensor(name), rope ? rope_tol : mid_tol);
  }
}

}  // namespace

static const bool registered = register_kind_runner("transformer", &run_transformer);
static const bool registered_fp8 = register_kind_runner("transformer_fp8", &run_transformer);

}  // namespace ltx2::golden
