// DurationHead (see duration_head.h).
#include "models/duration/duration_head.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/config_reader.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/shape.h"

namespace ltx2 {

namespace {

constexpr const char* kPrefix = "duration_head.";

// Python's round(): to the nearest integer, ties to even (nearbyint in the default rounding mode).
int64_t python_round(double x) {
  return static_cast<int64_t>(std::nearbyint(x));
}

}  // namespace

DurationHeadConfig duration_head_config(const WeightSet& set) {
  DurationHeadConfig c;
  const nlohmann::json& cfg = set.config();
  if (cfg.contains("transformer")) {
    ConfigReader t(cfg.at("transformer"), "transformer");
    c.video_dim = t.integer("cross_attention_dim", c.video_dim);
    c.audio_dim = t.integer("audio_cross_attention_dim", c.audio_dim);
  }
  if (cfg.contains("duration_head")) {
    ConfigReader d(cfg.at("duration_head"), "duration_head");
    c.pooler_hidden = d.integer("pooler_hidden_dim", c.pooler_hidden);
    c.num_queries = d.integer("num_queries", c.num_queries);
    c.num_heads = d.integer("num_pooler_heads", c.num_heads);
    c.mlp_hidden = d.integer("mlp_hidden", c.mlp_hidden);
  }
  LTX2_CHECK(c.video_dim > 0 && c.audio_dim > 0 && c.pooler_hidden > 0 && c.num_queries > 0 &&
                 c.num_heads > 0 && c.mlp_hidden > 0 && c.pooler_hidden % c.num_heads == 0,
             "{}: duration head config: widths must be positive and pooler_hidden_dim ({}) a multiple of "
             "num_pooler_heads ({})",
             set.describe(), c.pooler_hidden, c.num_heads);
  return c;
}

bool has_duration_head(const WeightSet& set) {
  for (const std::string& name : set.names())
    if (name.rfind(kPrefix, 0) == 0) return true;
  return false;
}

DurationHead::DurationHead(const std::shared_ptr<const WeightSet>& set)
    : config_(duration_head_config(*set)) {
  const WeightView w(set, {kPrefix}, "duration head");
  const int64_t E = config_.pooler_hidden, Q = config_.num_queries, H = config_.mlp_hidden;
  video_proj_w_ = w.load("video_input_proj.weight", {E, config_.video_dim});
  video_proj_b_ = w.load("video_input_proj.bias", {E});
  video_emb_ = w.load("video_modality_emb", {E});
  audio_proj_w_ = w.load("audio_input_proj.weight", {E, config_.audio_dim});
  audio_proj_b_ = w.load("audio_input_proj.bias", {E});
  audio_emb_ = w.load("audio_modality_emb", {E});
  queries_ = w.load("attention_pooler.query_tokens", {Q, E});
  in_proj_w_ = w.load("attention_pooler.cross_attn.in_proj_weight", {3 * E, E});
  in_proj_b_ = w.load("attention_pooler.cross_attn.in_proj_bias", {3 * E});
  out_proj_w_ = w.load("attention_pooler.cross_attn.out_proj.weight", {E, E});
  out_proj_b_ = w.load("attention_pooler.cross_attn.out_proj.bias", {E});
  mlp_hidden_w_ = w.load("mlp_hidden.weight", {H, Q * E});
  mlp_hidden_b_ = w.load("mlp_hidden.bias", {H});
  mlp_out_w_ = w.load("mlp_out.weight", {1, H});
  mlp_out_b_ = w.load("mlp_out.bias", {1});
}

Tensor DurationHead::seconds(const Tensor& video_tokens, const Tensor& audio_tokens) const {
  LTX2_CHECK(video_tokens.defined() || audio_tokens.defined(), "duration head: needs video or audio tokens");
  std::vector<Tensor> groups;
  int64_t B = 0;
  for (const auto& [tokens, w, b, emb, width, name] :
       {std::tuple{&video_tokens, &video_proj_w_, &video_proj_b_, &video_emb_, config_.video_dim, "video"},
        std::tuple{&audio_tokens, &audio_proj_w_, &audio_proj_b_, &audio_emb_, config_.audio_dim, "audio"}}) {
    if (!tokens->defined()) continue;
    LTX2_CHECK(tokens->dim() == 3 && tokens->size(2) == width,
               "duration head: {} tokens {} are not [B, T, {}]", name, tokens->str(), width);
    LTX2_CHECK(B == 0 || tokens->size(0) == B, "duration head: video and audio batches differ");
    B = tokens->size(0);
    groups.push_back(ops::add(ops::linear(tokens->to(DType::F32).to(Device::cpu()), *w, *b), *emb));
  }
  const Tensor tokens = ops::cat(groups, 1);  // [B, T, E]
  const int64_t E = config_.pooler_hidden, Q = config_.num_queries, heads = config_.num_heads, d = E / heads;
  const int64_t T = tokens.size(1);
  // nn.MultiheadAttention: q, k, v through the packed in_proj, heads of width E / heads.
  auto project = [&](const Tensor& x, int64_t part) {
    return ops::linear(x, in_proj_w_.narrow(0, part * E, E).contiguous(),
                       in_proj_b_.narrow(0, part * E, E).contiguous());
  };
  const Tensor q = project(queries_, 0).view({1, Q, heads, d}).permute({0, 2, 1, 3}).expand({B, heads, Q, d});
  const Tensor k = project(tokens, 1).view({B, T, heads, d}).permute({0, 2, 1, 3});
  const Tensor v = project(tokens, 2).view({B, T, heads, d}).permute({0, 2, 1, 3});
  const Tensor pooled =  // [B, heads, Q, d] -> [B, Q, E]
      ops::attention(q.contiguous(), k.contiguous(), v.contiguous()).permute({0, 2, 1, 3}).reshape({B, Q, E});
  const Tensor flat = ops::linear(pooled, out_proj_w_, out_proj_b_).reshape({B, Q * E});
  const Tensor hidden = ops::gelu_tanh(ops::linear(flat, mlp_hidden_w_, mlp_hidden_b_));
  return ops::exp(ops::linear(hidden, mlp_out_w_, mlp_out_b_).reshape({B}));
}

int64_t duration_to_frames(double seconds, double frame_rate, double min_seconds, double max_seconds) {
  LTX2_CHECK(std::isfinite(seconds) && frame_rate > 0 && min_seconds <= max_seconds,
             "duration: {} s at {} fps within [{}, {}] s cannot give a frame count", seconds, frame_rate,
             min_seconds, max_seconds);
  const int64_t min_frames = python_round(min_seconds * frame_rate);
  const int64_t max_frames = python_round(max_seconds * frame_rate);
  LTX2_CHECK(min_frames >= 1, "duration: {} s at {} fps is less than a frame", min_seconds, frame_rate);
  const int64_t raw = std::max(min_frames, std::min(python_round(seconds * frame_rate), max_frames));
  int64_t frames = (raw - 1) / 8 * 8 + 1;
  if (frames < min_frames) frames = std::min((min_frames - 1 + 7) / 8 * 8 + 1, max_frames);
  return frames;
}

}  // namespace ltx2
