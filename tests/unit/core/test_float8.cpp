// The 8-bit floats: conversions as PyTorch rounds them (values from torch's / ml_dtypes' casts of the
// same float32 inputs), every code round-trips, and Tensor conversions and to_scaled use them.
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/tensor.h"
#include "support/catch.h"

using namespace ltx2;

namespace {

struct Cast {
  float in;
  uint8_t e4m3, e5m2;
};

// float32 input -> (e4m3fn bits, e5m2 bits), as torch's .to(float8_e4m3fn / float8_e5m2) gives them.
const Cast kCasts[] = {
    {0.1f, 29, 46},        {-0.1f, 157, 174},      {448.f, 126, 95},     {460.f, 126, 95},
    {464.f, 126, 95},      {465.f, 127, 95},       {480.f, 127, 96},     {1e9f, 127, 124},
    {0.001953125f, 1, 24}, {0.0009765625f, 0, 20}, {0.00097657f, 1, 20}, {0.0029296875f, 2, 26},
    {0.015625f, 8, 36},    {0.0146484375f, 8, 36}, {3.14159f, 69, 66},   {-2.7f, 195, 193},
};

}  // namespace

TEST_CASE("float8: casts round as torch's do, to nearest even, without saturation") {
  for (const Cast& c : kCasts) {
    INFO("input " << c.in);
    CHECK(f32_to_f8e4m3(c.in) == c.e4m3);
    CHECK(f32_to_f8e5m2(c.in) == c.e5m2);
  }
  CHECK(f8e4m3_to_f32(29) == 0.1015625f);
  CHECK(f8e4m3_to_f32(126) == 448.f);
  CHECK(f8e4m3_to_f32(1) == 0.001953125f);  // the smallest subnormal, 2^-9
  CHECK(std::isnan(f8e4m3_to_f32(0x7f)));
  CHECK(std::isnan(f8e4m3_to_f32(0xff)));
  CHECK(f8e5m2_to_f32(46) == 0.09375f);
  CHECK(f8e5m2_to_f32(123) == 57344.f);
  CHECK(std::isinf(f8e5m2_to_f32(124)));
  CHECK(std::isnan(f8e5m2_to_f32(0x7f)));
  CHECK(f32_to_f8e4m3(-0.f) == 0x80);
}

TEST_CASE("float8: every code decodes to a value that encodes back to it") {
  for (int code = 0; code < 256; ++code) {
    const auto b = static_cast<uint8_t>(code);
    INFO("code " << code);
    const float e4 = f8e4m3_to_f32(b), e5 = f8e5m2_to_f32(b);
    if (!std::isnan(e4)) CHECK(f32_to_f8e4m3(e4) == b);
    if (!std::isnan(e5)) CHECK(f32_to_f8e5m2(e5) == b);
    // Every 8-bit float is exact in bf16, so the GPU can hold upcast weights there.
    if (!std::isnan(e4)) CHECK(round_bf16(e4) == e4);
    if (!std::isnan(e5)) CHECK(round_bf16(e5) == e5);
  }
}

TEST_CASE("float8: tensors convert through float32 and to_scaled dequantizes") {
  const Tensor x = Tensor::from_vector({0.1f, -2.7f, 448.f, 0.0029296875f}, {2, 2});
  const Tensor e4 = x.to(DType::F8E4M3);
  REQUIRE(e4.dtype() == DType::F8E4M3);
  REQUIRE(e4.nbytes() == 4);
  CHECK(e4.to(DType::F32).to_vector() == std::vector<float>{0.1015625f, -2.75f, 448.f, 0.00390625f});
  CHECK(x.to(DType::F8E5M2).to(DType::BF16).to_vector() ==
        std::vector<float>{0.09375f, -2.5f, 448.f, 0.0029296875f});
  // float(stored) x scale, rounded once to the target dtype.
  CHECK(e4.to_scaled(DType::F32, 0.5f).to_vector() ==
        std::vector<float>{0.05078125f, -1.375f, 224.f, 0.001953125f});
  CHECK(e4.to_scaled(DType::BF16, 3.f).to_vector() ==
        std::vector<float>{round_bf16(0.3046875f), -8.25f, 1344.f, round_bf16(0.01171875f)});
  // A strided source (a transpose) converts element by element.
  CHECK(e4.permute({1, 0}).to_scaled(DType::F32, 1.f).to_vector() ==
        std::vector<float>{0.1015625f, 448.f, -2.75f, 0.00390625f});
  REQUIRE_THROWS(Tensor::from_vector({1.f}, {1}).to(DType::I32).to_scaled(DType::F32, 2.f));
}
