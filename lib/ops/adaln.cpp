// The fused AdaLN ops (ops/adaln.h): the rows' shape checks both backends share, then the CUDA
// kernels, or on the CPU the composition of the float32 elementwise ops and RMSNorm in the
// reference's order (table + embedding, then x * (scale + 1) + shift / x + y * gate), so a model
// using them computes exactly what the unfused ops computed.
#include "ops/adaln.h"

#include "core/error.h"
#include "ops/cuda_ops.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/shape.h"

namespace ltx2::ops {

AdaRow ada_row(const Tensor& table, int64_t table_row, const Tensor& modulation, int64_t rows, int64_t row,
               const Tensor& index) {
  LTX2_CHECK(table.dim() == 2 && table_row >= 0 && table_row < table.size(0), "ada_row: row {} of table {}",
             table_row, table.str());
  AdaRow r{table.select(0, table_row), Tensor(), Tensor()};
  if (!modulation.defined()) return r;
  const int64_t D = table.size(1);
  LTX2_CHECK(modulation.dim() == 3 && modulation.size(2) == rows * D && row >= 0 && row < rows,
             "ada_row: row {} of {} rows of width {} in modulation {}", row, rows, D, modulation.str());
  r.embedding = modulation.view({modulation.size(0), modulation.size(1), rows, D}).select(2, row);
  if (index.defined()) {
    LTX2_CHECK(modulation.size(0) == 1 && index.dim() == 2 && index.dtype() == DType::I32 &&
                   index.device() == modulation.device(),
               "ada_row: an index {} reads the rows of modulation [1, U, ...] on its device, got {}",
               index.str(), modulation.str());
    r.index = index;
  }
  return r;
}

Tensor gather_rows(const Tensor& rows, const Tensor& index) {
  LTX2_CHECK(rows.dim() == 3 && rows.size(0) == 1 && index.dim() == 2 && index.dtype() == DType::I32 &&
                 index.device().is_cpu(),
             "gather_rows: rows {} must be [1, U, W] and the index {} int32 [B, T] on the host", rows.str(),
             index.str());
  const Tensor idx = index.contiguous();
  const int32_t* p = idx.data<int32_t>();
  const int64_t B = idx.size(0), T = idx.size(1), U = rows.size(1), W = rows.size(2);
  std::vector<Tensor> parts;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T;) {
      const int64_t u = p[b * T + t];
      LTX2_CHECK(u >= 0 && u < U, "gather_rows: index {} outside the {} rows", u, U);
      int64_t end = t + 1;
      while (end < T && p[b * T + end] == u) ++end;
      parts.push_back(rows.narrow(1, u, 1).expand({1, end - t, W}));
      t = end;
    }
  }
  if (parts.empty()) return Tensor::empty({B, T, W}, rows.dtype(), rows.device());
  return cat(parts, 1).view({B, T, W});
}

Tensor ada_value(const AdaRow& r) {
  if (!r.embedding.defined()) return r.table;
  return add(r.table, r.index.defined() ? gather_rows(r.embedding, r.index) : r.embedding);
}

namespace {
void check_row(const Tensor& x, const AdaRow& r, const char* op) {
  LTX2_CHECK(x.dim() == 3 && r.table.dim() == 1 && r.table.size(0) == x.size(2),
             "{}: table row {} does not fit x {}", op, r.table.str(), x.str());
  if (r.index.defined()) {
    LTX2_CHECK(r.embedding.defined() && r.embedding.dim() == 3 && r.embedding.size(0) == 1 &&
                   r.embedding.size(2) == x.size(2) && r.index.dim() == 2 && r.index.size(0) == x.size(0) &&
                   r.index.size(1) == x.size(1) && r.index.device() == x.device(),
               "{}: indexed rows {} by {} do not fit x {}", op, r.embedding.str(), r.index.str(), x.str());
  } else if (r.embedding.defined()) {
    LTX2_CHECK(r.embedding.dim() == 3 && r.embedding.size(0) == x.size(0) &&
                   r.embedding.size(2) == x.size(2) &&
                   (r.embedding.size(1) == 1 || r.embedding.size(1) == x.size(1)),
               "{}: embedding {} does not fit x {}", op, r.embedding.str(), x.str());
  }
}
}  // namespace

Tensor rms_norm_modulate(const Tensor& x, const AdaRow& shift, const AdaRow& scale, float eps) {
  check_row(x, shift, "rms_norm_modulate");
  check_row(x, scale, "rms_norm_modulate");
  LTX2_DISPATCH_CUDA(x.device(), rms_norm_modulate, x, shift, scale, eps);
  return add(mul(rms_norm(x, Tensor(), eps), add(ada_value(scale), 1.0f)), ada_value(shift));
}

Fp8Rows rms_norm_modulate_fp8(const Tensor& x, const AdaRow& shift, const AdaRow& scale, float eps) {
  check_row(x, shift, "rms_norm_modulate_fp8");
  check_row(x, scale, "rms_norm_modulate_fp8");
  LTX2_CHECK(x.size(2) > 0, "rms_norm_modulate_fp8: x {} has empty rows", x.str());
  LTX2_DISPATCH_CUDA(x.device(), rms_norm_modulate_fp8, x, shift, scale, eps);
  return quantize_rows_f8e4m3(rms_norm_modulate(x, shift, scale, eps));
}

Tensor add_gated(const Tensor& x, const Tensor& y, const AdaRow& gate) {
  check_row(x, gate, "add_gated");
  LTX2_CHECK(y.shape() == x.shape(), "add_gated: y {} does not match x {}", y.str(), x.str());
  LTX2_DISPATCH_CUDA(x.device(), add_gated, x, y, gate);
  return add(x, mul(y, ada_value(gate)));
}

}  // namespace ltx2::ops
