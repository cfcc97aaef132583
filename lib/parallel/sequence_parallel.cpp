// Ulysses sequence parallelism: the head all-to-alls, the SP attention strategy and the executor
// that pads, shards, runs and gathers (see sequence_parallel.h).
#include "parallel/sequence_parallel.h"

#include <chrono>
#include <vector>

#include "core/error.h"
#include "parallel/sequence_partition.h"

namespace ltx2::parallel {

namespace tr = models::transformer;

namespace {

using SteadyClock = std::chrono::steady_clock;

// Adds one collective's cost to `traffic` when it goes out of scope.
class TrafficTimer {
 public:
  TrafficTimer(CollectiveTraffic& traffic, int64_t bytes_sent) : traffic_(traffic) {
    traffic_.bytes_sent += bytes_sent;
  }
  ~TrafficTimer() { traffic_.seconds += std::chrono::duration<double>(SteadyClock::now() - start_).count(); }
  TrafficTimer(const TrafficTimer&) = delete;
  TrafficTimer& operator=(const TrafficTimer&) = delete;

 private:
  CollectiveTraffic& traffic_;
  SteadyClock::time_point start_ = SteadyClock::now();
};

// Bytes an all_to_all of x in W equal segments sends to other ranks (all but its own segment).
int64_t all_to_all_bytes(const Tensor& x, int world) {
  return static_cast<int64_t>(x.nbytes()) / world * (world - 1);
}

Tensor all_to_all_uniform(comm::Communicator& comm, const Tensor& segments_by_rank) {
  const std::vector<int64_t> counts(comm.world_size(), segments_by_rank.numel() / comm.world_size());
  return comm.all_to_all(segments_by_rank, counts, counts);
}

// The config, once every head-parallel attention's head count divides the world size.
TransformerConfig checked_config(TransformerConfig config, int world) {
  check_heads_divisible(config.video_heads, world, "video self-attention");
  check_heads_divisible(config.audio_heads, world, "video-to-audio attention");
  return config;
}

}  // namespace

Tensor scatter_heads(comm::Communicator& comm, const Tensor& x) {
  const int64_t W = comm.world_size();
  LTX2_CHECK(x.dim() == 4 && x.size(2) % W == 0,
             "scatter_heads: x {} must be [B, n, H, d] with H divisible by {}", x.str(), W);
  const int64_t B = x.size(0), n = x.size(1), Hl = x.size(2) / W, d = x.size(3);
  // Segment for rank p: heads [p*Hl, (p+1)*Hl) of every local token, [W][B, n, Hl, d].
  const Tensor send = x.reshape({B, n, W, Hl, d}).permute({2, 0, 1, 3, 4}).contiguous();
  const Tensor recv = all_to_all_uniform(comm, send);  // [W (source)][B, n, Hl, d]
  return recv.view({W, B, n, Hl, d}).permute({1, 0, 2, 3, 4}).contiguous().view({B, W * n, Hl, d});
}

Tensor gather_heads(comm::Communicator& comm, const Tensor& x) {
  const int64_t W = comm.world_size();
  LTX2_CHECK(x.dim() == 4 && x.size(1) % W == 0,
             "gather_heads: x {} must be [B, T, H/W, d] with T divisible by {}", x.str(), W);
  const int64_t B = x.size(0), n = x.size(1) / W, Hl = x.size(2), d = x.size(3);
  // Segment for rank p: its tokens [p*n, (p+1)*n) for this rank's heads, [W][B, n, Hl, d].
  const Tensor send = x.reshape({B, W, n, Hl, d}).permute({1, 0, 2, 3, 4}).contiguous();
  const Tensor recv = all_to_all_uniform(comm, send);  // [W (source = head group)][B, n, Hl, d]
  return recv.view({W, B, n, Hl, d}).permute({1, 2, 0, 3, 4}).contiguous().view({B, n, W * Hl, d});
}

SequenceParallelAttention::SequenceParallelAttention(comm::Communicator& comm) : comm_(comm) {}

void SequenceParallelAttention::set_video_tokens(int64_t real, int64_t padded) {
  LTX2_CHECK(real > 0 && padded >= real && padded % comm_.world_size() == 0,
             "sequence parallel: {} video tokens padded to {} do not shard over {} ranks", real, padded,
             comm_.world_size());
  real_tokens_ = real;
  padded_tokens_ = padded;
}

Tensor SequenceParallelAttention::real_keys(const Tensor& x) const {
  return padded_tokens_ == real_tokens_ ? x : x.narrow(1, 0, real_tokens_);
}

void SequenceParallelAttention::check_shard(tr::AttentionSite site, const Tensor& video_part) const {
  LTX2_CHECK(
      padded_tokens_ > 0 && video_part.size(1) * comm_.world_size() == padded_tokens_,
      "sequence parallel: {} got {} video tokens on each of {} ranks, expected {} in all (run the model "
      "through SequenceParallelTransformer)",
      tr::attention_site_name(site), video_part.size(1), comm_.world_size(), padded_tokens_);
}

Tensor SequenceParallelAttention::attend(tr::AttentionSite site, const Tensor& q, const Tensor& k,
                                         const Tensor& v, int64_t heads, const Tensor& mask) const {
  switch (site) {
    case tr::AttentionSite::VideoSelf:
      check_heads_divisible(heads, comm_.world_size(), tr::attention_site_name(site));
      check_shard(site, q);
      return video_self(q, k, v, heads, mask);
    case tr::AttentionSite::VideoToAudio:
      check_heads_divisible(heads, comm_.world_size(), tr::attention_site_name(site));
      check_shard(site, k);
      return video_to_audio(q, k, v, heads, mask);
    default:
      // Queries are local video tokens or replicated audio tokens; keys are replicated text/audio.
      return local_.attend(site, q, k, v, heads, mask);
  }
}

Tensor SequenceParallelAttention::video_self(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                                             const Tensor& mask) const {
  const int W = comm_.world_size();
  const int64_t B = q.size(0), n = q.size(1), d = q.size(2) / heads, Hl = heads / W, T = n * W;
  CollectiveTraffic& traffic = traffic_.video_self;
  ++traffic.calls;
  auto scatter = [&](const Tensor& x) {
    const Tensor heads_view = x.reshape({B, n, heads, d});
    TrafficTimer timer(traffic, all_to_all_bytes(heads_view, W));
    return scatter_heads(comm_, heads_view).view({B, T, Hl * d});
  };
  const Tensor qh = scatter(q), kh = real_keys(scatter(k)), vh = real_keys(scatter(v));
  // The user's mask ([B or 1, 1, T or 1, T], padded) loses the padded keys' columns with the keys.
  const Tensor key_mask =
      mask.defined() && padded_tokens_ != real_tokens_ ? mask.narrow(3, 0, real_tokens_) : mask;
  const Tensor out =
      local_.attend(tr::AttentionSite::VideoSelf, qh, kh, vh, Hl, key_mask).view({B, T, Hl, d});
  TrafficTimer timer(traffic, all_to_all_bytes(out, W));
  return gather_heads(comm_, out).view({B, n, heads * d});
}

Tensor SequenceParallelAttention::video_to_audio(const Tensor& q, const Tensor& k, const Tensor& v,
                                                 int64_t heads, const Tensor& mask) const {
  LTX2_CHECK(!mask.defined(), "sequence parallel: video-to-audio attention takes no mask, got {}",
             mask.str());
  const int W = comm_.world_size();
  const int64_t B = k.size(0), n = k.size(1), Ta = q.size(1), d = q.size(2) / heads, Hl = heads / W,
                T = n * W;
  CollectiveTraffic& traffic = traffic_.video_to_audio;
  ++traffic.calls;
  auto scatter = [&](const Tensor& x) {
    const Tensor heads_view = x.reshape({B, n, heads, d});
    TrafficTimer timer(traffic, all_to_all_bytes(heads_view, W));
    return scatter_heads(comm_, heads_view).view({B, T, Hl * d});
  };
  const Tensor kh = real_keys(scatter(k)), vh = real_keys(scatter(v));
  // The audio queries are replicated: take this rank's heads without communication.
  const Tensor qh = q.reshape({B, Ta, heads, d}).narrow(2, comm_.rank() * Hl, Hl).reshape({B, Ta, Hl * d});
  const Tensor out = local_.attend(tr::AttentionSite::VideoToAudio, qh, kh, vh, Hl, Tensor{});
  TrafficTimer timer(traffic, static_cast<int64_t>(out.nbytes()) * (W - 1));
  const Tensor all = comm_.all_gather(out.view({B, Ta, Hl, d}));  // [W, B, Ta, Hl, d]
  return all.permute({1, 2, 0, 3, 4}).contiguous().view({B, Ta, heads * d});
}

SequenceParallelTransformer::SequenceParallelTransformer(TransformerConfig config,
                                                         tr::TransformerWeights weights,
                                                         comm::Communicator& comm, int64_t max_tokens)
    : comm_(comm),
      max_tokens_(max_tokens),
      attention_(std::make_shared<SequenceParallelAttention>(comm)),
      model_(checked_config(std::move(config), comm.world_size()), std::move(weights), attention_) {}

tr::TransformerOutput SequenceParallelTransformer::forward(const tr::Modality* video,
                                                           const tr::Modality* audio,
                                                           const tr::BatchedPerturbations& perturbations) {
  if (video == nullptr || video->latent.size(1) == 0) return model_.forward(video, audio, perturbations);
  const int W = comm_.world_size();
  const int64_t T = video->latent.size(1);

  const PaddedSequence padded = pad_for_uniform_sharding(token_fields(*video), W);
  // The reference checks one sample's tokens; the buffers hold the whole batch.
  check_token_budget(video->latent.size(0) * padded.tokens.num_tokens(), max_tokens_);
  const TokenSequence shard = shard_for_rank(padded.tokens, comm_.rank(), W);

  // Without a user mask the padded keys need none: the attentions cut them off after the all-to-all.
  tr::Modality local = with_token_fields(*video, shard);
  attention_->set_video_tokens(T, padded.tokens.num_tokens());

  tr::TransformerOutput out = model_.forward(&local, audio, perturbations);
  const int64_t B = out.video.size(0), n = out.video.size(1), C = out.video.size(2);
  TrafficTimer timer(attention_->traffic().output_gather, static_cast<int64_t>(out.video.nbytes()) * (W - 1));
  ++attention_->traffic().output_gather.calls;
  const Tensor all = comm_.all_gather(out.video);  // [W, B, n, C]
  out.video = all.permute({1, 0, 2, 3}).contiguous().view({B, W * n, C}).narrow(1, 0, T).contiguous();
  return out;
}

models::transformer::TransformerOutput SequenceParallelExecutor::forward(
    const models::transformer::Transformer& model, const models::transformer::Modality* video,
    const models::transformer::Modality* audio,
    const models::transformer::BatchedPerturbations& perturbations) {
  SequenceParallelTransformer sp(model.config(), model.weights(), comm_);
  return sp.forward(video, audio, perturbations);
}

}  // namespace ltx2::parallel
