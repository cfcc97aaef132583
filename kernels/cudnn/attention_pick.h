// Which engine runs an unmasked CUDA attention: the wgmma kernel (kernels/attention.cu) or cuDNN
// (attention_cudnn.h), by the mode of ops::attention_engine(). Built with cuDNN only; without it
// the wgmma kernel runs everything.
#pragma once

#include <cstdint>
#include <functional>

#include "core/tensor.h"
#include "ops/attention.h"

namespace ltx2::cuda {

// Runs out = attention(q, k, v) on cuDNN when the mode says so and cuDNN can: Cudnn whenever it
// can, Auto when cuDNN was the faster engine for this shape and layout, Wgmma never. Auto times
// both engines once per new (device, shape, strides) with device events (one host
// synchronisation), logs the pick once and remembers it. Returns whether cuDNN ran; when not, the
// caller runs the wgmma kernel. `run_wgmma` runs the wgmma kernel into `out` (for the timing).
bool attention_by_cudnn(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale,
                        const std::function<void()>& run_wgmma);

// For tests: the engine Auto picked for operands of this shape and layout (Auto when none yet),
// and how many shapes Auto has timed in this process.
ops::AttentionEngine picked_attention_engine(const Tensor& q, const Tensor& k, const Tensor& v);
int64_t attention_engine_timings();

}  // namespace ltx2::cuda
