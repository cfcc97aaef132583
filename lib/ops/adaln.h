// Fused AdaLN ops of the diffusion transformer (reference: transformer.py, the blocks' use of the
// scale_shift_tables): each modulation value is a row of a block's table plus the same row of the
// per-sample or per-token AdaLN embedding, read in place instead of materialised as a [B, T, D] sum.
// The CPU implementations compose the float32 ops in the reference's order (they are the reference
// of the CUDA kernels); the CUDA kernels compute in float32 and round once to x's dtype.
#pragma once

#include "core/tensor.h"
#include "ops/linear.h"

namespace ltx2::ops {

// table + embedding: table [D] (a row of a scale_shift_table), embedding [B, T', D] with T' = 1 (per
// sample) or T (per token), or undefined (the table row alone). Both may be views (last dim
// contiguous), e.g. one row of a [B, T', rows * D] AdaLN output viewed as [B, T', rows, D].
// With `index` (int32 [B, T], on the embedding's device), embedding is [1, U, D]: the rows of the
// U distinct timesteps, token (b, t) reading row index[b, t] (the AdaLN computed once per
// distinct timestep instead of per token; the same values).
struct AdaRow {
  Tensor table;
  Tensor embedding;
  Tensor index;
};

// Row `table_row` of table [R, D] plus row `row` of modulation [B, T', rows * D] (undefined: none),
// or of modulation [1, U, rows * D] read through `index` as AdaRow says.
AdaRow ada_row(const Tensor& table, int64_t table_row, const Tensor& modulation, int64_t rows, int64_t row,
               const Tensor& index = Tensor());
// The row's value materialised: table + embedding, broadcast (per token through an index: on the
// CPU; the CUDA kernels read indexed rows in place).
Tensor ada_value(const AdaRow& r);
// rows [1, U, W] (any device, last dim contiguous) gathered by index [B, T] (int32, on the host) to
// a contiguous [B, T, W] on the rows' device: each run of equal consecutive indices is one copy.
Tensor gather_rows(const Tensor& rows, const Tensor& index);

// rms_norm(x) * (1 + scale) + shift over the last dim of x [B, T, D] (RMSNorm without weight).
Tensor rms_norm_modulate(const Tensor& x, const AdaRow& shift, const AdaRow& scale, float eps);
// rms_norm_modulate's rows quantized each with its own scale (quantize_rows_f8e4m3), the input of
// the per-row FP8 linears that read them (--quantization fp8). CUDA: one kernel, the rows quantized
// from the float32 values before any rounding to x's dtype; CPU: the two ops composed.
Fp8Rows rms_norm_modulate_fp8(const Tensor& x, const AdaRow& shift, const AdaRow& scale, float eps);
// x + y * gate, x and y [B, T, D].
Tensor add_gated(const Tensor& x, const Tensor& y, const AdaRow& gate);

}  // namespace ltx2::ops
