// Sequence parallelism (Ulysses, multigpu.md 3): every rank holds a contiguous 1/W of the (padded)
// video tokens; the attentions that mix video tokens trade tokens for heads with all-to-alls so each
// rank attends over all tokens for H/W heads, and trade back afterwards. Everything else in the
// transformer is per token and runs unchanged on the local shard (transformer.md 8).
//
// Padded video tokens are cut off as keys after the all-to-all rather than masked (no wasted keys,
// and no reliance on a mask leaving the arithmetic alone), in the video->audio attention too, unlike
// the reference, so any token count gives the single-rank result bit for bit.
#pragma once

#include <cstdint>
#include <memory>

#include "comm/communicator.h"
#include "models/transformer/transformer.h"
#include "pipeline/stage_executors.h"

namespace ltx2::parallel {

// x [B, n, H, d]: this rank's n tokens, all heads. Returns [B, W*n, H/W, d]: every rank's tokens
// (rank-major, i.e. global order) for this rank's heads [rank*H/W, (rank+1)*H/W).
Tensor scatter_heads(comm::Communicator& comm, const Tensor& x);
// The inverse: x [B, W*n, H/W, d] (all tokens, this rank's heads) -> [B, n, H, d].
Tensor gather_heads(comm::Communicator& comm, const Tensor& x);

// What the collectives of one kind of attention cost this rank since the last reset.
struct CollectiveTraffic {
  int64_t bytes_sent = 0;  // payload sent to other ranks (a rank's own segment is not counted)
  double seconds = 0;      // host wall time inside the calls (an asynchronous engine: issuing them)
  int64_t calls = 0;       // attentions served
};

struct SequenceParallelTraffic {
  CollectiveTraffic video_self;      // q, k, v scatter + output gather
  CollectiveTraffic video_to_audio;  // k, v scatter + all-gather of the audio output heads
  CollectiveTraffic output_gather;   // the final all-gather of the video tokens
};

// The AttentionStrategy of every SP rank: video self-attention and video->audio attention go
// head-parallel through the communicator; the other sites are per video token and stay local.
class SequenceParallelAttention final : public models::transformer::AttentionStrategy {
 public:
  explicit SequenceParallelAttention(comm::Communicator& comm);

  // The video sequence of the forward about to run: `real` tokens padded to `padded`
  // (a multiple of the world size). The padded keys are dropped from both head-parallel attentions.
  void set_video_tokens(int64_t real, int64_t padded);

  Tensor attend(models::transformer::AttentionSite site, const Tensor& q, const Tensor& k, const Tensor& v,
                int64_t heads, const Tensor& mask) const override;

  const SequenceParallelTraffic& traffic() const { return traffic_; }
  SequenceParallelTraffic& traffic() { return traffic_; }

 private:
  Tensor video_self(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                    const Tensor& mask) const;
  Tensor video_to_audio(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                        const Tensor& mask) const;
  void check_shard(models::transformer::AttentionSite site, const Tensor& video_part) const;
  // x [B, padded, C] (all video tokens after the all-to-all) -> its real tokens.
  Tensor real_keys(const Tensor& x) const;

  comm::Communicator& comm_;
  models::transformer::LocalAttention local_;
  int64_t real_tokens_ = 0, padded_tokens_ = 0;
  mutable SequenceParallelTraffic traffic_;
};

// Runs one Transformer under sequence parallelism on this rank: pads and shards the video
// modality, runs the model with SequenceParallelAttention, all-gathers and unpads the video output.
// Every rank calls forward with the same full inputs; every rank returns the full outputs.
class SequenceParallelTransformer {
 public:
  // The reference's default sp_max_tokens (multigpu.md 3.6).
  static constexpr int64_t kDefaultMaxTokens = 32768;

  // Refuses, before any collective, head counts the world size does not divide. forward() refuses
  // (on every rank, before any collective) batches whose batch x padded video tokens exceed
  // max_tokens, the budget the all-to-all buffers of a GPU engine are sized for.
  SequenceParallelTransformer(TransformerConfig config, models::transformer::TransformerWeights weights,
                              comm::Communicator& comm, int64_t max_tokens = kDefaultMaxTokens);

  models::transformer::TransformerOutput forward(
      const models::transformer::Modality* video, const models::transformer::Modality* audio,
      const models::transformer::BatchedPerturbations& perturbations = {});

  const models::transformer::Transformer& model() const { return model_; }
  SequenceParallelAttention& attention() { return *attention_; }

 private:
  comm::Communicator& comm_;
  int64_t max_tokens_;
  std::shared_ptr<SequenceParallelAttention> attention_;
  models::transformer::Transformer model_;
};

// Sequence parallel as a stage's executor (pipeline/stage_executors.h): every transformer pass of
// the stage runs over all of `comm`'s ranks, on the model's weights as they are at that pass.
class SequenceParallelExecutor final : public pipeline::TransformerExecutor {
 public:
  explicit SequenceParallelExecutor(comm::Communicator& comm) : comm_(comm) {}
  models::transformer::TransformerOutput forward(
      const models::transformer::Transformer& model, const models::transformer::Modality* video,
      const models::transformer::Modality* audio,
      const models::transformer::BatchedPerturbations& perturbations) override;

 private:
  comm::Communicator& comm_;
};

}  // namespace ltx2::parallel
