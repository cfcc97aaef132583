// The reference's Gemma placement as the pipelines' text-encode executor (multigpu.md: Gemma on
// rank 0 + broadcast): rank 0 encodes, the others receive each prompt's video and audio contexts.
// Only rank 0 holds Gemma (the other ranks' pipelines load no text encoder), so N GPUs hold one.
#pragma once

#include "comm/communicator.h"
#include "pipeline/stage_executors.h"

namespace ltx2::parallel {

class BroadcastTextEncoder final : public pipeline::TextEncodeExecutor {
 public:
  explicit BroadcastTextEncoder(comm::Communicator& comm) : comm_(comm) {}
  // On every rank in the same order: first each context's dtype and shape (4 numbers a context),
  // then the tensors. Ranks other than 0 get an all-ones context mask. Rank 0 enhances.
  std::vector<EncodedPrompt> encode(pipeline::PipelineModels& models, const std::vector<std::string>& prompts,
                                    const std::optional<EnhanceSettings>& enhance_first) override;

 private:
  comm::Communicator& comm_;
};

}  // namespace ltx2::parallel
