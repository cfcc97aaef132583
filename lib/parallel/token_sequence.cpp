// Run-wise index select / scatter-add over one axis, on any device (slices and copy_).
#include "parallel/token_sequence.h"

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::parallel {

namespace {

// Calls fn(src_start, dst_start, length) for each maximal run of consecutive indices.
template <typename Fn>
void for_each_run(const std::vector<int64_t>& idx, Fn fn) {
  size_t i = 0;
  while (i < idx.size()) {
    size_t j = i + 1;
    while (j < idx.size() && idx[j] == idx[j - 1] + 1) ++j;
    fn(idx[i], static_cast<int64_t>(i), static_cast<int64_t>(j - i));
    i = j;
  }
}

}  // namespace

Tensor take_indices(const Tensor& x, int dim, const std::vector<int64_t>& idx) {
  const int64_t extent = x.size(dim);
  for (int64_t i : idx)
    LTX2_CHECK(i >= 0 && i < extent, "take_indices: index {} outside axis of {}", i, extent);
  Shape shape = x.shape();
  shape[dim < 0 ? dim + x.dim() : dim] = static_cast<int64_t>(idx.size());
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  for_each_run(idx, [&](int64_t src, int64_t dst, int64_t len) {
    out.narrow(dim, dst, len).copy_(x.narrow(dim, src, len));
  });
  return out;
}

void add_at_indices(Tensor& out, int dim, const std::vector<int64_t>& idx, const Tensor& values) {
  LTX2_CHECK(values.size(dim) == static_cast<int64_t>(idx.size()), "add_at_indices: {} values for {} indices",
             values.size(dim), idx.size());
  for_each_run(idx, [&](int64_t dst, int64_t src, int64_t len) {
    Tensor target = out.narrow(dim, dst, len);
    target.copy_(ops::add(target, values.narrow(dim, src, len)));
  });
}

namespace {
bool per_token_timesteps(const models::transformer::Modality& m) {
  return m.timesteps.dim() >= 2 && m.timesteps.size(1) == m.latent.size(1);
}
}  // namespace

TokenSequence token_fields(const models::transformer::Modality& video) {
  TokenSequence seq;
  seq.latent = video.latent;
  seq.positions = video.positions;
  seq.keyframes_mask = video.keyframes_mask;
  seq.attention_mask = video.attention_mask;
  if (per_token_timesteps(video)) seq.timesteps = video.timesteps;
  return seq;
}

models::transformer::Modality with_token_fields(models::transformer::Modality base,
                                                const TokenSequence& tokens) {
  if (per_token_timesteps(base)) base.timesteps = tokens.timesteps;
  if (base.attention_mask.defined()) base.attention_mask = tokens.attention_mask;
  base.latent = tokens.latent;
  base.positions = tokens.positions;
  base.keyframes_mask = tokens.keyframes_mask;
  return base;
}

}  // namespace ltx2::parallel
