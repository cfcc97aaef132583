// Scaled dot-product attention, the one op every model attends through (a sequence-parallel
// strategy later wraps it rather than the models).
#pragma once

#include <string>

#include "core/tensor.h"

namespace ltx2::ops {

// q [B, H, Tq, D], k [B, H, Tk, D], v [B, H, Tk, Dv] -> [B, H, Tq, Dv].
// mask: undefined, or broadcastable to [B, H, Tq, Tk]: bool/u8 (true = attend) or float (added
// to the scores; -inf excludes). scale <= 0 means 1/sqrt(D). A query row whose keys are all
// excluded yields zeros (the reference's SDPA would give NaN; the pipelines never produce one).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {},
                 float scale = 0.f);

// The CUDA backend has two engines for unmasked attention at head dims 64 and 128: the hand-written
// wgmma kernel and cuDNN's fused flash attention (builds with cuDNN only). Auto times both once per
// new shape (device events) and keeps the faster; Wgmma and Cudnn force one (Cudnn falls back to
// wgmma where cuDNN cannot run: masks, unsupported layouts, builds without cuDNN). The mode starts
// from the environment variable LTX2_ATTENTION (auto|wgmma|cudnn; default auto).
enum class AttentionEngine { Auto, Wgmma, Cudnn };

AttentionEngine attention_engine();
void set_attention_engine(AttentionEngine engine);
// "auto", "wgmma" or "cudnn"; anything else throws naming `what` (e.g. the variable it came from).
AttentionEngine parse_attention_engine(const std::string& name, const std::string& what);
const char* attention_engine_name(AttentionEngine engine);
// Whether this build has the cuDNN engine.
bool cudnn_attention_built();

}  // namespace ltx2::ops
