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

tr::TransformerOutput GuidanceParallelExecutor::forward(const tr::Transformer& model,
                                                        const tr::Modality* video, const tr::Modality* audio,
                                                        const tr::BatchedPerturbations& perturbations) {
  const int W = comm_.world_size();
  const int64_t batch = batch_of(video, audio);
  const bool split = splits(batch, W);
  say(split, batch);
  if (!split)
    return in_calls(video, audio, perturbations, 0, batch,
                    [&](const tr::Modality* v, const tr::Modality* a, const tr::BatchedPerturbations& p) {
                      return sequence_.forward(model, v, a, p);
                    });

  const int64_t share = batch / W;
  tr::TransformerOutput out =
      in_calls(video, audio, perturbations, comm_.rank() * share, share,
               [&](const tr::Modality* v, const tr::Modality* a, const tr::BatchedPerturbations& p) {
                 return model.forward(v, a, p);
               });
  // [W, share, ...] in rank order is the batch in sample order. Every rank has the same streams.
  const auto gather = [&](const Tensor& mine) {
    if (!mine.defined()) return mine;
    Shape shape = mine.shape();
    shape[0] = batch;
    return comm_.all_gather(mine.contiguous()).view(shape);
  };
  out.video = gather(out.video);
  out.audio = gather(out.audio);
  return out;
}

void GuidanceParallelExecutor::say(bool split, int64_t samples) {
  if (said_ == static_cast<int>(split) || comm_.rank() != 0) return;
  said_ = static_cast<int>(split);
  const int W = comm_.world_size();
  if (split)
    log_info(
        "guidance passes: {} a step over {} ranks, {} each (guidance-branch parallel, one all-gather a step)",
        samples, W, samples / W);
  else
    log_info(
        "guidance passes: {} a step do not divide over {} ranks; each runs sequence parallel over all of "
        "them",
        samples, W);
}

}  // namespace ltx2::parallel
