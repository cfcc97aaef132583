#include "parallel/guidance_parallel.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "ops/shape.h"

namespace ltx2::parallel {

namespace tr = models::transformer;

namespace {

constexpr int kMostPassesPerStep = 4;  // cond, uncond, perturbed, isolated modality

int64_t batch_of(const tr::Modality* video, const tr::Modality* audio) {
  const tr::Modality* m = video ? video : audio;
  LTX2_CHECK(m != nullptr, "guidance parallel: a forward with neither stream");
  return m->latent.size(0);
}

// Samples [first, first + count) of a modality whose tensors are batched along dim 0 (a tensor of
// batch 1 is shared by every sample and stays whole).
tr::Modality samples_of(const tr::Modality& m, int64_t batch, int64_t first, int64_t count) {
  tr::Modality out = m;
  for (const tr::ModalityField& f : tr::kModalityFields) {
    Tensor& t = out.*f.member;
    if (t.defined() && t.dim() > 0 && t.size(0) == batch && batch > 1) t = t.narrow(0, first, count);
  }
  return out;
}

Tensor concat(const std::vector<Tensor>& parts) {
  if (parts.empty() || !parts.front().defined()) return {};
  return parts.size() == 1 ? parts.front() : ops::cat(parts, 0);
}

}  // namespace

int GuidanceParallelExecutor::passes_per_call(int max_batch_size) {
  LTX2_CHECK(max_batch_size >= 1, "guidance parallel: --max-batch-size {} is below 1", max_batch_size);
  local_batch_ = max_batch_size;
  return kMostPassesPerStep;
}

template <class Run>
tr::TransformerOutput GuidanceParallelExecutor::in_calls(const tr::Modality* video, const tr::Modality* audio,
                                                         const tr::BatchedPerturbations& perturbations,
                                                         int64_t first, int64_t count, Run&& run) {
  const int64_t batch = batch_of(video, audio);
  if (first == 0 && count == batch && count <= local_batch_) return run(video, audio, perturbations);
  std::vector<Tensor> videos, audios;
  for (int64_t at = first; at < first + count; at += local_batch_) {
    const int64_t n = std::min<int64_t>(local_batch_, first + count - at);
    const tr::Modality v = video ? samples_of(*video, batch, at, n) : tr::Modality{};
    const tr::Modality a = audio ? samples_of(*audio, batch, at, n) : tr::Modality{};
    const tr::TransformerOutput out =
        run(video ? &v : nullptr, audio ? &a : nullptr, perturbations.samples(at, n));
    videos.push_back(out.video);
    audios.push_back(out.audio);
  }
  return {concat(videos), concat(audios)};
}

int GuidanceParallelExecutor::groups_for(int64_t samples, int world,
                                         const std::function<bool(int)>& has_cut) {
  for (int groups = std::min<int64_t>(samples, world); groups > 1; --groups)
    if (samples % groups == 0 && world % groups == 0 && (groups == world || has_cut(groups))) return groups;
  return 1;
}

tr::TransformerOutput GuidanceParallelExecutor::forward(const tr::Transformer& model,
                                                        const tr::Modality* video, const tr::Modality* audio,
                                                        const tr::BatchedPerturbations& perturbations) {
  const int W = comm_.world_size();
  const int64_t batch = batch_of(video, audio);
  const int G = groups_for(batch, W, [this](int g) { return comm::has_cut(groups_, g); });
  say(G, batch);
  if (G == 1)
    return in_calls(video, audio, perturbations, 0, batch,
                    [&](const tr::Modality* v, const tr::Modality* a, const tr::BatchedPerturbations& p) {
                      return sequence_.forward(model, v, a, p);
                    });

  const int S = W / G;
  comm::Communicator* group = comm::group_communicator(groups_, G, W, comm_.rank(), "guidance parallel");
  const int64_t share = batch / G;
  tr::TransformerOutput out = in_calls(
      video, audio, perturbations, comm_.rank() / S * share, share,
      [&](const tr::Modality* v, const tr::Modality* a, const tr::BatchedPerturbations& p) {
        return group ? SequenceParallelExecutor(*group).forward(model, v, a, p) : model.forward(v, a, p);
      });
  out.video = gather_groups(out.video, batch, G);
  out.audio = gather_groups(out.audio, batch, G);
  return out;
}

// Each rank of a group sends its 1/S of the group's flattened prediction (zero-padded to S equal
// parts), so the all-gather moves every prediction once: [W, part] in rank order is group by group,
// each group's parts in order.
Tensor GuidanceParallelExecutor::gather_groups(const Tensor& mine, int64_t batch, int groups) const {
  if (!mine.defined()) return mine;
  const int S = comm_.world_size() / groups;
  const int64_t n = mine.numel(), part = (n + S - 1) / S;
  Tensor flat = mine.contiguous().view({n});
  if (part * S != n) flat = ops::pad(flat, 0, 0, part * S - n);
  const Tensor all = comm_.all_gather(flat.narrow(0, comm_.rank() % S * part, part).contiguous());
  Shape shape = mine.shape();
  shape[0] = batch;
  return all.view({groups, part * S}).narrow(1, 0, n).contiguous().view(shape);
}

void GuidanceParallelExecutor::say(int groups, int64_t samples) {
  if (said_ == groups || comm_.rank() != 0) return;
  said_ = groups;
  const int W = comm_.world_size();
  if (groups == W)
    log_info(
        "guidance passes: {} a step over {} ranks, {} each (guidance-branch parallel, one all-gather a step)",
        samples, W, samples / W);
  else if (groups > 1)
    log_info(
        "guidance passes: {} a step over {} groups of {} ranks, {} each, sequence parallel within a group "
        "(guidance-branch parallel, one all-gather a step)",
        samples, groups, W / groups, samples / groups);
  else
    log_info(
        "guidance passes: {} a step do not divide over {} ranks or groups of them; each runs sequence "
        "parallel over all of them",
        samples, W);
}

}  // namespace ltx2::parallel
