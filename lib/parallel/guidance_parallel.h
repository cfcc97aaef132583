// Guidance-branch parallelism: the guided passes of a denoising step (conditional, unconditional,
// perturbed, isolated modality) run on different ranks at once instead of one after another over
// all ranks. The pipeline hands the executor all of a step's passes in one forward
// (passes_per_call). The ranks are cut into G groups of S consecutive ranks (comm_groups.h), G the
// largest number that divides both the samples and the ranks and that the fleet has communicators
// for: group g runs its contiguous share of the samples in calls of the request's --max-batch-size,
// alone (S = 1) or sequence parallel over its group's communicator, as one process would; then one
// all-gather over all ranks gives every rank every prediction, in sample order, for the step's
// guidance to combine exactly as one process does. No world collective runs inside the passes, so
// the groups may run different perturbations. With no such cut (G = 1) the passes run sequence
// parallel over all ranks, one call per --max-batch-size passes.
//
// Across nodes a group never spans two (the fleet prepares only cuts whose groups fit in a node):
// sequence parallel inside a node, the step's one all-gather across them.
#pragma once

#include <cstdint>
#include <functional>

#include "comm/comm_groups.h"
#include "comm/communicator.h"
#include "parallel/sequence_parallel.h"
#include "pipeline/stage_executors.h"

namespace ltx2::parallel {

class GuidanceParallelExecutor final : public pipeline::TransformerExecutor {
 public:
  // `groups` (may be null: no cut but the ranks themselves) gives the groups' communicators.
  GuidanceParallelExecutor(comm::Communicator& comm, comm::CommGroups* groups)
      : comm_(comm), groups_(groups), sequence_(comm) {}

  // How many groups `samples` passes of one forward run in on `world` ranks: the largest G > 1
  // dividing both for which the groups are single ranks (G = world) or `has_cut(G)`; 1 when none is.
  static int groups_for(int64_t samples, int world, const std::function<bool(int)>& has_cut);

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
  // Every rank holds its group's prediction `mine`; returns the whole batch's in sample order.
  Tensor gather_groups(const Tensor& mine, int64_t batch, int groups) const;
  void say(int groups, int64_t samples);

  comm::Communicator& comm_;
  comm::CommGroups* groups_;
  SequenceParallelExecutor sequence_;
  int local_batch_ = 1;
  int said_ = 0;  // the number of groups last logged (0: none yet)
};

}  // namespace ltx2::parallel
