// Which engine runs a CUDA attention call: the wgmma kernel (kernels/attention.cu, every call),
// the FlashAttention-3-style kernel (attention_fa3.h: unmasked, head dim 128) or cuDNN
// (cudnn/attention_cudnn.h, builds with cuDNN: unmasked multi-head attention at 64 and 128), by
// the mode of ops::attention_engine().
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "ops/attention.h"

namespace ltx2::cuda {

// An engine that may take one call: `run` computes it into the call's output and returns whether
// it could (cuDNN may find no engine for a shape).
struct AttentionCandidate {
  ops::AttentionEngine engine;
  std::function<bool()> run;
};

// Runs the call (operands q, k, v; for the pick's key) on one of `candidates`, the first of which
// is the wgmma kernel and always runs. A forced mode runs its engine when it is a candidate and
// can, else the wgmma kernel. Auto: per new (device, shape, strides) every candidate runs once
// untimed and is then timed with device events (median of three; one host synchronisation), the
// fastest is logged once with every time and kept for the rest of the process. Returns the engine
// that ran.
ops::AttentionEngine run_attention_engine(const Tensor& q, const Tensor& k, const Tensor& v,
                                          const std::vector<AttentionCandidate>& candidates);

// For tests: the engine Auto picked for operands of this shape and layout (Auto when none yet),
// and how many shapes Auto has timed (more than one candidate) in this process.
ops::AttentionEngine picked_attention_engine(const Tensor& q, const Tensor& k, const Tensor& v);
int64_t attention_engine_timings();

}  // namespace ltx2::cuda
