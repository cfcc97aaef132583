// LTXModel.forward: per-stream preprocessing (patchify projection, AdaLN, context, masks, RoPE,
// A<->V modulation inputs), the blocks, and the output heads (reference: model.py,
// transformer_args.py).
#include "models/transformer/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "io/layout.h"
#include "models/transformer/block.h"
#include "models/transformer/modules.h"
#include "ops/adaln.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"

namespace ltx2::models::transformer {

namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();

ops::RopeSpec rope_spec(const TransformerConfig& c, int64_t dim, int64_t heads, std::vector<double> max_pos) {
  ops::RopeSpec s;
  s.dim = dim;
  s.heads = heads;
  s.theta = c.rope_theta;
  s.max_pos = std::move(max_pos);
  s.layout = c.rope_layout == RopeLayout::Split ? ops::RopeLayout::Split : ops::RopeLayout::Interleaved;
  s.grid = c.rope_float64_grid ? ops::RopeGridPrecision::Float64 : ops::RopeGridPrecision::Float32;
  return s;
}

// Integer mask (1 valid, 0 padded) -> (m - 1) * FLT_MAX as [B, 1, 1, S]; a float mask is additive.
Tensor context_bias(const Tensor& mask) {
  if (!mask.defined() || mask.dtype() == DType::F32) return mask;
  const Tensor m = mask.to(DType::F32);
  return ops::mul(ops::add(m, -1.0f), kFloatMax).reshape({m.size(0), 1, -1, m.size(-1)});
}

// [0, 1] weights -> log(max(m, FLT_MIN)) where m > 0, -FLT_MAX elsewhere, as [B, 1, Tq, Tk].
// Input preparation formed once on the CPU.
Tensor self_attention_bias(const Tensor& mask) {
  if (!mask.defined()) return mask;
  const Tensor m = mask.to(Device::cpu()).to(DType::F32).contiguous();
  Tensor bias = Tensor::empty(m.shape());
  const float* src = m.data<float>();
  float* dst = bias.data<float>();
  for (int64_t i = 0; i < m.numel(); ++i)
    dst[i] = src[i] > 0 ? std::log(std::max(src[i], std::numeric_limits<float>::min())) : -kFloatMax;
  return bias.unsqueeze(1).to(mask.device());
}

// 1 where keyframes_mask > 0 (formed on the CPU: it is input preparation).
Tensor keyframe_indicator(const Tensor& mask) {
  const Tensor m = mask.to(Device::cpu()).to(DType::F32).contiguous();
  Tensor out = Tensor::empty(m.shape());
  const float* src = m.data<float>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < m.numel(); ++i) dst[i] = src[i] > 0 ? 1.0f : 0.0f;
  return out.to(mask.device());
}

// The distinct values of tau [B * T] (compared by bit pattern: equal values share a row, any others
// differ) in order of first appearance, as `values` [U] in tau's dtype on its device, and each token's
// row, `index` int32 [B, T] on the host. Reads tau on the host (one small copy from the device).
struct DistinctTimesteps {
  Tensor values, index;
};

DistinctTimesteps distinct_timesteps(const Tensor& tau, int64_t B, int64_t T) {
  const Tensor host = tau.to(Device::cpu()).to(DType::F32).contiguous();
  const float* t = host.data<float>();
  std::vector<float> values;
  std::unordered_map<uint32_t, int32_t> row_of;
  Tensor index = Tensor::empty({B, T}, DType::I32);
  int32_t* row = index.data<int32_t>();
  for (int64_t i = 0; i < B * T; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &t[i], sizeof bits);
    auto [it, added] = row_of.emplace(bits, static_cast<int32_t>(values.size()));
    if (added) values.push_back(t[i]);
    row[i] = it->second;
  }
  const auto U = static_cast<int64_t>(values.size());
  return {Tensor::from_vector(values, {U}).to(tau.dtype()).to(tau.device()), index};
}

struct StreamSetup {
  const char* name;
  const StreamWeights& weights;
  int64_t dim, heads;
  const std::vector<double>& max_pos;
};

StreamState prepare(const TransformerConfig& c, const StreamSetup& st, const Modality& m,
                    const Modality* other, const Tensor& keyframes_embedding, const Probe& probe) {
  auto emit = [&](const std::string& what, const Tensor& t) {
    if (probe) probe(std::string(st.name) + "." + what, t);
  };
  LTX2_CHECK(m.latent.defined() && m.latent.dim() == 3, "transformer: {} latent must be [B, T, C], got {}",
             st.name, m.latent.str());
  StreamState s;
  const int64_t B = m.latent.size(0), T = m.latent.size(1);
  s.heads = st.heads;
  s.present = T > 0;
  s.runs = s.present && m.enabled;
  LTX2_CHECK(m.latent.size(2) == st.weights.patchify_proj.weight.size(1),
             "transformer: {} latent has {} channels, the model takes {}", st.name, m.latent.size(2),
             st.weights.patchify_proj.weight.size(1));

  s.x = apply_linear(m.latent, st.weights.patchify_proj);
  if (keyframes_embedding.defined() && m.keyframes_mask.defined())
    s.x = ops::add(s.x, ops::mul(keyframe_indicator(m.keyframes_mask), keyframes_embedding));
  emit("proj_in", s.x);

  const float tsm = static_cast<float>(c.timestep_scale_multiplier);
  LTX2_CHECK(m.timesteps.defined() && m.timesteps.numel() % B == 0,
             "transformer: {} timesteps {} do not fit batch {}", st.name, m.timesteps.str(), B);
  Tensor tau = ops::mul(m.timesteps.reshape({m.timesteps.numel()}), tsm);
  // Per-token timesteps take a handful of values (sigma, and the conditioned tokens' own): the
  // AdaLN MLPs run once per distinct value and the fused ops read each token's row by index.
  Tensor host_index;  // int32 [B, T] on the host, or undefined: one AdaLN row per timestep entry
  if (T > 1 && tau.numel() == B * T) {
    DistinctTimesteps d = distinct_timesteps(tau, B, T);
    if (d.values.numel() < tau.numel()) {
      tau = d.values;
      host_index = d.index;
      s.ada_index = d.index.to(s.x.device());
    }
  }
  // A [1, U, W] AdaLN output as the [B, T, W] per-token tensor it stands for (for the probes and
  // the output head), or a per-entry one viewed [B, T', W].
  auto per_token = [&](const Tensor& out) {
    const int64_t W = out.size(-1);
    return host_index.defined() ? ops::gather_rows(out.view({1, -1, W}), host_index) : out.view({B, -1, W});
  };
  Tensor sinusoid;
  AdaLnOutput ada = adaln_single(st.weights.adaln, tau, &sinusoid);
  if (probe) emit("t_sinusoid", per_token(sinusoid).view({-1, sinusoid.size(-1)}));
  s.modulation = host_index.defined() ? ada.modulation.view({1, -1, ada.modulation.size(-1)})
                                      : ada.modulation.view({B, -1, ada.modulation.size(-1)});
  s.embedded_timestep = per_token(ada.embedding);
  if (probe) emit("adaln_mod", per_token(ada.modulation));
  emit("embedded_timestep", s.embedded_timestep);

  if (c.has_prompt_adaln()) {
    LTX2_CHECK(m.sigma.defined(), "transformer: {} sigma is required by the prompt AdaLN", st.name);
    const Tensor prompt =
        adaln_single(st.weights.prompt_adaln, ops::mul(m.sigma.reshape({m.sigma.numel()}), tsm)).modulation;
    s.prompt_modulation = prompt.view({B, -1, prompt.size(-1)});
    emit("prompt_adaln_mod", s.prompt_modulation);
  }

  LTX2_CHECK(m.context.defined() && m.context.dim() == 3 && m.context.size(0) == B,
             "transformer: {} context must be [B, S, C], got {}", st.name, m.context.str());
  Tensor ctx = m.context;
  if (c.caption_projection)
    ctx = apply_linear(apply_linear_gelu_tanh(ctx, st.weights.caption_linear_1), st.weights.caption_linear_2);
  LTX2_CHECK(ctx.size(2) == st.dim, "transformer: {} context width {} != inner width {}", st.name,
             ctx.size(2), st.dim);
  s.context = ctx;
  emit("context", s.context);
  s.context_mask = context_bias(m.context_mask);
  if (s.context_mask.defined()) emit("context_mask_bias", s.context_mask);
  s.self_mask = self_attention_bias(m.attention_mask);

  LTX2_CHECK(m.positions.defined() && m.positions.size(1) == static_cast<int64_t>(st.max_pos.size()),
             "transformer: {} positions {} need {} axes", st.name, m.positions.str(), st.max_pos.size());
  // The tables are formed where the model runs (on a GPU from device positions: no host copy).
  const Tensor positions = m.positions.to(s.x.device());
  const ops::RopeSpec spec = rope_spec(c, st.dim, st.heads, st.max_pos);
  s.rope = ops::rope_tables(positions, spec);
  emit("freq_grid",
       ops::rope_frequency_grid(spec.theta, static_cast<int64_t>(spec.max_pos.size()), spec.dim, spec.grid));
  emit("rope_cos", s.rope.cos);
  emit("rope_sin", s.rope.sin);

  if (other != nullptr) {
    LTX2_CHECK(other->sigma.defined() && other->sigma.numel() == B,
               "transformer: the other stream's sigma must have one value per sample ({})", B);
    const double cross_max = std::max(c.video_max_pos[0], c.audio_max_pos[0]);
    const ops::RopeSpec cross = rope_spec(c, c.audio_context_dim, st.heads, {cross_max});
    s.cross_rope = ops::rope_tables(positions.slice(1, 0, 1), cross);
    if (probe) probe("cross.freq_grid", ops::rope_frequency_grid(cross.theta, 1, cross.dim, cross.grid));
    emit("cross_rope_cos", s.cross_rope.cos);
    emit("cross_rope_sin", s.cross_rope.sin);
    const Tensor ss = adaln_single(st.weights.av_scale_shift, tau).modulation;
    s.cross_modulation = host_index.defined() ? ss.view({1, -1, ss.size(-1)}) : ss.view({B, -1, ss.size(-1)});
    if (probe) emit("cross_ss_mod", per_token(ss));
    // sigma * tsm first, then * (av_ca / tsm) with the factor formed in double, as the reference.
    const float factor = static_cast<float>(c.av_ca_timestep_scale_multiplier / c.timestep_scale_multiplier);
    const Tensor gate_t = ops::mul(ops::mul(other->sigma.reshape({B}), tsm), factor);
    const Tensor gate = adaln_single(st.weights.av_gate, gate_t).modulation;
    s.cross_gate = gate.view({B, -1, gate.size(-1)});
    emit("cross_gate_mod", s.cross_gate);
  }
  return s;
}

Tensor output_head(const StreamWeights& w, const StreamState& s, float eps) {
  const Tensor shift = ops::add(w.output_table.select(0, 0), s.embedded_timestep);
  const Tensor scale = ops::add(w.output_table.select(0, 1), s.embedded_timestep);
  const Tensor y = ops::layer_norm(s.x, Tensor(), Tensor(), eps);
  return apply_linear(modulate(y, shift, scale), w.proj_out);
}

}  // namespace

Transformer::Transformer(TransformerConfig config, TransformerWeights weights,
                         std::shared_ptr<const AttentionStrategy> attention)
    : config_(std::move(config)), weights_(std::move(weights)), attention_(std::move(attention)) {
  LTX2_CHECK(attention_ != nullptr, "transformer: no attention strategy");
  LTX2_CHECK(static_cast<int64_t>(weights_.blocks.size()) == config_.num_layers,
             "transformer: {} blocks of weights for {} layers", weights_.blocks.size(), config_.num_layers);
}

Transformer Transformer::load(std::shared_ptr<const WeightSet> weights,
                              std::shared_ptr<const AttentionStrategy> attention, DType dtype, Device device,
                              Quantization quantization) {
  const nlohmann::json& cfg = weights->config();
  LTX2_CHECK(cfg.contains("transformer"), "{}: metadata config has no 'transformer' section",
             weights->describe());
  TransformerConfig config = TransformerConfig::parse(cfg.at("transformer"));
  const WeightView view(weights, component_prefixes(Component::Transformer), "transformer");
  TransformerWeights w = TransformerWeights::load(view, config, dtype, device, quantization);
  return Transformer(std::move(config), std::move(w), std::move(attention));
}

TransformerOutput Transformer::forward(const Modality* video, const Modality* audio,
                                       const BatchedPerturbations& perturbations, const Probe& probe) const {
  LTX2_CHECK(video != nullptr || audio != nullptr,
             "transformer: neither a video nor an audio stream was given");
  const TransformerConfig& c = config_;
  StreamState vs, as;
  if (video)
    vs = prepare(c, {"video", weights_.video, c.video_dim(), c.video_heads, c.video_max_pos}, *video, audio,
                 weights_.keyframes_embedding, probe);
  if (audio)
    as = prepare(c, {"audio", weights_.audio, c.audio_dim(), c.audio_heads, c.audio_max_pos}, *audio, video,
                 Tensor(), probe);
  if (video && audio)
    LTX2_CHECK(vs.x.size(0) == as.x.size(0), "transformer: video batch {} != audio batch {}", vs.x.size(0),
               as.x.size(0));
  if (!perturbations.empty()) {
    const int64_t B = video ? vs.x.size(0) : as.x.size(0);
    LTX2_CHECK(perturbations.batch() == B && perturbations.mask().size(1) == c.num_layers,
               "transformer: perturbation mask {} does not fit batch {} and {} blocks",
               perturbations.mask().str(), B, c.num_layers);
  }
  for (int64_t i = 0; i < c.num_layers; ++i) {
    run_block(weights_.blocks[i], c, i, perturbations, *attention_, vs, as);
    if (probe) {
      if (video) probe("block" + std::to_string(i) + ".video_x", vs.x);
      if (audio) probe("block" + std::to_string(i) + ".audio_x", as.x);
    }
  }
  const float eps = static_cast<float>(c.norm_eps);
  TransformerOutput out;
  if (video) out.video = output_head(weights_.video, vs, eps);
  if (audio) out.audio = output_head(weights_.audio, as, eps);
  return out;
}

Tensor denoised_from_velocity(const Tensor& latent, const Tensor& velocity, const Tensor& timesteps) {
  const Tensor t = timesteps.dim() == 3 ? timesteps : timesteps.reshape({latent.size(0), -1, 1});
  return ops::sub(latent, ops::mul(velocity, t));
}

Modality modality_from_fields(const std::function<Tensor(const std::string& field)>& get) {
  Modality m;
  for (const ModalityField& f : kModalityFields) m.*f.member = get(f.name);
  return m;
}

}  // namespace ltx2::models::transformer
