// CPU elementwise ops: broadcasting binary ops and unary activations, float32.
#include <cmath>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {

template <typename F>
void binary_loop(const Tensor& ae, const Tensor& be, Tensor& out, F f) {
  float* o = out.data<float>();
  const float* pa = ae.data<float>();
  const float* pb = be.data<float>();
  int nd = out.dim();
  int64_t n = out.numel();
  if (n == 0) return;
  if (nd == 0) {
    o[0] = f(pa[0], pb[0]);
    return;
  }
  int64_t inner = out.size(-1);
  int64_t sa = ae.stride(-1), sb = be.stride(-1);
  int64_t outer = n / inner;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t r = 0; r < outer; ++r) {
    int64_t rem = r, oa = 0, ob = 0;
    for (int d = nd - 2; d >= 0; --d) {
      int64_t c = rem % out.shape()[d];
      rem /= out.shape()[d];
      oa += c * ae.strides()[d];
      ob += c * be.strides()[d];
    }
    float* orow = o + r * inner;
    for (int64_t i = 0; i < inner; ++i) orow[i] = f(pa[oa + i * sa], pb[ob + i * sb]);
  }
}

}  // namespace

Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op) {
  LTX2_CHECK(b.device().is_cpu(), "binary op: operands on {} and {}", a.device().str(), b.device().str());
  if (any_bf16({&a, &b}))
    return cpu::binary(widen(a), widen(b), op)
        .to(a.dtype() == DType::F32 || b.dtype() == DType::F32 ? DType::F32 : DType::BF16);
  LTX2_CHECK(a.dtype() == DType::F32 && b.dtype() == DType::F32, "binary op: f32 expected, got {} and {}",
             a.str(), b.str());
  Shape shape = broadcast_shapes(a.shape(), b.shape());
  Tensor ae = a.expand(shape), be = b.expand(shape);
  Tensor out = Tensor::empty(shape);
  switch (op) {
    case BinaryOp::Add: binary_loop(ae, be, out, [](float x, float y) { return x + y; }); break;
    case BinaryOp::Sub: binary_loop(ae, be, out, [](float x, float y) { return x - y; }); break;
    case BinaryOp::Mul: binary_loop(ae, be, out, [](float x, float y) { return x * y; }); break;
    case BinaryOp::Div: binary_loop(ae, be, out, [](float x, float y) { return x / y; }); break;
    case BinaryOp::Max: binary_loop(ae, be, out, [](float x, float y) { return std::max(x, y); }); break;
    case BinaryOp::Min: binary_loop(ae, be, out, [](float x, float y) { return std::min(x, y); }); break;
  }
  return out;
}

namespace {

float apply_unary(UnaryOp op, float v, float alpha) {
  switch (op) {
    case UnaryOp::Neg: return -v;
    case UnaryOp::Exp: return std::exp(v);
    case UnaryOp::Log: return std::log(v);
    case UnaryOp::Sqrt: return std::sqrt(v);
    case UnaryOp::Rsqrt: return 1.f / std::sqrt(v);
    case UnaryOp::Abs: return std::fabs(v);
    case UnaryOp::Tanh: return std::tanh(v);
    case UnaryOp::Sigmoid: return 1.f / (1.f + std::exp(-v));
    case UnaryOp::Silu: return v / (1.f + std::exp(-v));
    case UnaryOp::GeluTanh: {
      const float c = 0.7978845608028654f;  // sqrt(2/pi)
      return 0.5f * v * (1.f + std::tanh(c * (v + 0.044715f * v * v * v)));
    }
    case UnaryOp::GeluErf: return 0.5f * v * (1.f + std::erf(v * 0.7071067811865476f));
    case UnaryOp::Relu: return v > 0.f ? v : 0.f;
    case UnaryOp::LeakyRelu: return v >= 0.f ? v : v * alpha;
    case UnaryOp::Sin: return std::sin(v);
    case UnaryOp::Cos: return std::cos(v);
    case UnaryOp::AddScalar: return v + alpha;
    case UnaryOp::MulScalar: return v * alpha;
    case UnaryOp::PowScalar: return std::pow(v, alpha);
    case UnaryOp::DivScalar: return v / alpha;
  }
  return v;
}

}  // namespace

Tensor unary(const Tensor& x, UnaryOp op, float alpha) {
  if (any_bf16({&x})) return cpu::unary(widen(x), op, alpha).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32, "unary op: f32 expected, got {}", x.str());
  Tensor xc = x.contiguous();
  Tensor out = Tensor::empty(x.shape());
  const float* in = xc.data<float>();
  float* o = out.data<float>();
  int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) o[i] = apply_unary(op, in[i], alpha);
  return out;
}

}  // namespace ltx2::ops::cpu
