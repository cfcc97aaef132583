// The reference's Gemma placement as the pipelines' text-encode executor (multigpu.md: Gemma on
// rank 0 + broadcast): rank 0 encodes, the others receive each prompt's video and audio contexts.
// Only rank 0 holds Gemma (the other ranks' pipelines load no text encoder), so N GPUs hold one.
// The duration head follows it: with --num-frames unset rank 0 predicts the length from the
// contexts and the others receive the count, so every rank plans the same video.
#pragma once

#include "comm/communicator.h"
#include "pipeline/stage_executors.h"

namespace ltx2::parallel {

class BroadcastTextEncoder final : public pipeline::TextEncodeExecutor {
 public:
  explicit BroadcastTextEncoder(comm::Communicator& comm) : comm_(comm) {}
  // On every rank in the same order: first each context's dtype and shape (4 numbers a context)
  // and whether rank 0 encoded, then the tensors. Ranks other than 0 get an all-ones context mask.
  // Rank 0 enhances. When its encoding throws, every rank throws (rank 0 its error), so the job
  // fails on all of them alike and no rank waits in a later collective.
  std::vector<EncodedPrompt> encode(pipeline::PipelineModels& models, const std::vector<std::string>& prompts,
                                    const std::optional<EnhanceSettings>& enhance_first) override;

 private:
  comm::Communicator& comm_;
};

class BroadcastDuration final : public pipeline::DurationExecutor {
 public:
  explicit BroadcastDuration(comm::Communicator& comm) : comm_(comm) {}
  // On every rank: rank 0 runs resolve_num_frames (its head and probe; the others' are not used)
  // and broadcasts the count. When rank 0's prediction throws, every rank throws, rank 0 its error,
  // so the job fails on all of them alike and no rank waits in a later collective.
  int num_frames(const DurationHead* head, const GenerationRequest& request, const Tensor& video_context,
                 const Tensor& audio_context,
                 const std::function<void(const Tensor&)>& probe_seconds) override;

 private:
  comm::Communicator& comm_;
};

}  // namespace ltx2::parallel
