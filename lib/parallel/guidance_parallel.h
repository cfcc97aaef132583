// Guidance-branch parallelism: the guided passes of a denoising step (conditional, unconditional,
// perturbed, isolated modality) run on different ranks at once instead of one after another over
// all ranks. The pipeline hands the executor all of a step's passes in one forward
// (passes_per_call); each rank runs its contiguous share of the samples in calls of the request's
// --max-batch-size, as one process would, and one all-gather gives every rank every prediction, in
// sample order, for the step's guidance to combine exactly as one process does. No collective
// runs inside the passes, so the ranks may run different perturbations.
//
// The split needs the samples to divide evenly over the ranks (a 4-pass ti2vid step on 2 or 4
// ranks); otherwise the passes run sequence parallel over all ranks, one call per --max-batch-size
// passes, as before. Groups of ranks each running sequence parallel (8 ranks on 4 passes) would
// need a communicator per group, which the engines do not make yet.
#pragma once

#include <cstdint>

#include "comm/communicator.h"
#include "parallel/sequence_parallel.h"
#include "pipeline/stage_executors.h"

namespace ltx2::parallel {

class GuidanceParallelExecutor final : public pipeline::TransformerExecutor {
 public:
  explicit GuidanceParallelExecutor(comm::Communicator& comm) : comm_(comm), sequence_(comm) {}

  // Whether `samples` of one forward spread over `world` ranks, one share each.
  static bool splits(int64_t samples, int world) { return world > 1 && samples % world == 0; }

  // Takes every pass of a step (4, the most a step has); `max_batch_size` batches each rank's share.
  int passes_per_call(int max_batch_size) override;

  models::transformer::TransformerOutput forward(
      const models::transformer::Transformer& model, const models::transformer::Modality* video,
      const models::transformer::Modality* audio,
      const models::transformer::BatchedPerturbations& perturbations) override;

 private:
  // Samples [first, first + count) of the batch through `run`, in calls of at most local_batch_,
  // the outputs concatenated.
  template <class Run>
  models::transformer::TransformerOutput in_calls(
      const models::transformer::Modality* video, const models::transformer::Modality* audio,
      const models::transformer::BatchedPerturbations& perturbations, int64_t first, int64_t count,
      Run&& run);
  void say(bool split, int64_t samples);

  comm::Communicator& comm_;
  SequenceParallelExecutor sequence_;
  int local_batch_ = 1;
  int said_ = -1;  // the choice last logged: 1 split, 0 sequence parallel
};

}  // namespace ltx2::parallel
