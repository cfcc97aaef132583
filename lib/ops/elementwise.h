// Elementwise ops with NumPy broadcasting, and activations. Float32 on the CPU.
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

enum class BinaryOp : int { Add, Sub, Mul, Div, Max, Min };
enum class UnaryOp : int {
  Neg, Exp, Log, Sqrt, Rsqrt, Abs, Tanh, Sigmoid, Silu, GeluTanh, GeluErf, Relu,
  LeakyRelu,  // alpha = negative slope
  Sin, Cos,
  AddScalar,  // x + alpha
  MulScalar,  // x * alpha
  PowScalar,  // x ^ alpha
  DivScalar,  // x / alpha (a true division, not x * (1 / alpha): the schedulers' float32 steps)
};

Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op);
Tensor unary(const Tensor& x, UnaryOp op, float alpha = 0.f);

inline Tensor add(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::Add); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::Sub); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::Mul); }
inline Tensor div(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::Div); }
inline Tensor maximum(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::Max); }
inline Tensor minimum(const Tensor& a, const Tensor& b) { return binary(a, b, BinaryOp::Min); }
inline Tensor add(const Tensor& x, float s) { return unary(x, UnaryOp::AddScalar, s); }
inline Tensor mul(const Tensor& x, float s) { return unary(x, UnaryOp::MulScalar, s); }
inline Tensor div(const Tensor& x, float s) { return unary(x, UnaryOp::DivScalar, s); }
inline Tensor silu(const Tensor& x) { return unary(x, UnaryOp::Silu); }
inline Tensor gelu_tanh(const Tensor& x) { return unary(x, UnaryOp::GeluTanh); }
inline Tensor gelu(const Tensor& x) { return unary(x, UnaryOp::GeluErf); }
inline Tensor sigmoid(const Tensor& x) { return unary(x, UnaryOp::Sigmoid); }
inline Tensor tanh(const Tensor& x) { return unary(x, UnaryOp::Tanh); }
inline Tensor exp(const Tensor& x) { return unary(x, UnaryOp::Exp); }

// Output shape of broadcasting a with b; throws on a mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace ltx2::ops
