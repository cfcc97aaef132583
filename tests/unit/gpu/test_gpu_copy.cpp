// The GPU strided copy (Tensor::copy_ / contiguous() between GPU tensors) against the CPU copy, byte
// for byte: head split and merge transposes of [B, T, H, D] with head widths that take 16-, 8- and
// 2/4-byte words, bf16 and f32, misaligned sources and destinations (views one element into their
// buffer), broadcast (stride 0) sources, size-1 and 8-d layouts, and dtype conversions.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "gpu_compare.h"
#include "ops/shape.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

using View = std::function<Tensor(const Tensor&)>;

// Random values in `dtype` on the CPU; integers small enough to convert exactly.
Tensor cpu_values(const Shape& shape, DType dtype, uint64_t seed) {
  const Tensor r = ops::mul(test::random_tensor(shape, seed), 100.f);
  return r.to(dtype);
}

void require_same_bytes(const Tensor& gpu, const Tensor& cpu) {
  REQUIRE(gpu.device().is_cuda());
  REQUIRE(gpu.dtype() == cpu.dtype());
  REQUIRE(gpu.shape() == cpu.shape());
  const Tensor a = gpu.contiguous().to(Device::cpu()), b = cpu.contiguous();
  REQUIRE(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

// Float32 results equal bit for bit, except that a NaN matches any NaN: the GPU's arithmetic returns
// the canonical NaN where the CPU keeps the operand's sign and payload (seen on the H200: e4m3 NaN
// x 3 gave 0x7fffffff there, 0xffc00000 here).
void require_same_floats(const Tensor& gpu, const Tensor& cpu) {
  REQUIRE(gpu.device().is_cuda());
  REQUIRE(gpu.dtype() == DType::F32);
  REQUIRE(cpu.dtype() == DType::F32);
  const std::vector<float> a = gpu.to_vector(), b = cpu.to_vector();
  REQUIRE(a.size() == b.size());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i)
    differ += std::isnan(b[i]) ? !std::isnan(a[i]) : std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  REQUIRE(differ == 0);
}

// A buffer one element longer than `shape`, viewed from its second element: misaligned for any word.
Tensor offset_by_one(const Tensor& t) {
  const Tensor flat = Tensor::empty({t.numel() + 1}, t.dtype(), t.device());
  Tensor v = flat.narrow(0, 1, t.numel()).view(t.shape());
  v.copy_(t);
  return v;
}

// view(base) made contiguous in `out` on the GPU and on the CPU, from the same values.
void check(const Tensor& cpu_base, const View& view, DType out, bool misaligned_src = false) {
  Tensor gpu_base = cpu_base.to(test::gpu());
  if (misaligned_src) gpu_base = offset_by_one(gpu_base);
  const Tensor want = view(cpu_base).to(out).contiguous();
  const Tensor got = view(gpu_base).to(out).contiguous();
  require_same_bytes(got, want);
  // The same copy into a misaligned destination.
  const Tensor dst_flat = Tensor::empty({want.numel() + 1}, out, test::gpu());
  Tensor dst = dst_flat.narrow(0, 1, want.numel()).view(want.shape());
  dst.copy_(view(gpu_base));
  require_same_bytes(dst, want);
}

const View kSplitHeads = [](const Tensor& t) { return t.permute({0, 2, 1, 3}); };

}  // namespace

TEST_CASE("gpu: copy transposes [B, T, H, D] <-> [B, H, T, D], bf16 and f32, every word width") {
  for (DType dtype : {DType::BF16, DType::F32})
    for (int64_t D : {int64_t{128}, int64_t{12}, int64_t{7}, int64_t{2}}) {
      INFO(dtype_name(dtype) << " D " << D);
      const Tensor x = cpu_values({2, 33, 5, D}, dtype, 10 + static_cast<uint64_t>(D));
      check(x, kSplitHeads, dtype);                                     // split heads
      check(x.permute({0, 2, 1, 3}).contiguous(), kSplitHeads, dtype);  // and merge them back
      check(
          x, [](const Tensor& t) { return t.transpose(-1, -2); }, dtype);  // inner dim strided
    }
}

TEST_CASE("gpu: copy from misaligned sources and of narrowed (non-contiguous inner) views") {
  for (DType dtype : {DType::BF16, DType::F32}) {
    const Tensor x = cpu_values({3, 17, 4, 64}, dtype, 20);
    check(x, kSplitHeads, dtype, true);
    check(
        x, [](const Tensor& t) { return t.narrow(3, 1, 40); }, dtype);  // rows offset by one element
    check(
        x, [](const Tensor& t) { return t.narrow(3, 8, 48); }, dtype);  // rows offset by 8: still packed
  }
}

TEST_CASE("gpu: copy of broadcast (stride 0) sources, size-1 dims, 8-d layouts and one element") {
  for (DType dtype : {DType::BF16, DType::F32}) {
    check(
        cpu_values({1, 9, 1, 32}, dtype, 30),
        [](const Tensor& t) {
          return t.expand({2, 9, 6, 32});
        },
        dtype);
    check(
        cpu_values({2, 9, 1}, dtype, 31),
        [](const Tensor& t) {
          return t.expand({2, 9, 24});
        },
        dtype);
    check(
        cpu_values({1, 1, 1}, dtype, 32),
        [](const Tensor& t) {
          return t.expand({3, 4, 16});
        },
        dtype);
    check(
        cpu_values({2, 1, 3, 1, 2, 5, 1, 8}, dtype, 33),
        [](const Tensor& t) {
          return t.permute({7, 1, 2, 3, 0, 5, 6, 4});
        },
        dtype);
    check(
        cpu_values({1, 1}, dtype, 34), [](const Tensor& t) { return t.transpose(0, 1); }, dtype);
  }
}

TEST_CASE("gpu: copy with dtype conversions over strided views") {
  const Tensor f = cpu_values({2, 11, 3, 10}, DType::F32, 40);
  for (DType out : {DType::BF16, DType::F16}) check(f, kSplitHeads, out);
  for (DType out : {DType::F32, DType::F16}) check(f.to(DType::BF16), kSplitHeads, out);
  const Tensor i = cpu_values({4, 6, 5}, DType::I64, 41);
  check(
      i, [](const Tensor& t) { return t.transpose(0, 2); }, DType::I32);
  check(
      i, [](const Tensor& t) { return t.transpose(0, 2); }, DType::F32);
  check(
      i.to(DType::I32), [](const Tensor& t) { return t.transpose(1, 2); }, DType::I64);
  check(
      f, [](const Tensor& t) { return t.transpose(1, 3); }, DType::I32);
}

TEST_CASE("gpu: 8-bit float conversions and scaled copies round as the CPU's, bit for bit") {
  // Values across the 8-bit ranges (x100 of a unit normal, then x0.01 and x10 of that), NaN-making
  // ones (> 464 for e4m3) included; and every code of both formats decoded.
  const Tensor f = cpu_values({3, 7, 2, 16}, DType::F32, 42);
  for (const Tensor& src : {f, ops::mul(f, 0.01f), ops::mul(f, 10.f), f.to(DType::BF16)})
    for (DType out : {DType::F8E4M3, DType::F8E5M2}) {
      check(src, kSplitHeads, out);
      const Tensor eight = src.to(out);
      check(eight, kSplitHeads, DType::F32);
      check(eight, kSplitHeads, DType::BF16);
      require_same_bytes(eight.to(test::gpu()).to_scaled(DType::BF16, 0.37f),
                         eight.to_scaled(DType::BF16, 0.37f));
      require_same_floats(eight.to(test::gpu()).to_scaled(DType::F32, 3.f), eight.to_scaled(DType::F32, 3.f));
    }
  std::vector<float> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<float>(c);
  // The byte tensor owns the codes; each 8-bit view holds it (a null owner would mean "free this").
  const auto all = std::make_shared<const Tensor>(Tensor::from_vector(codes, {256}).to(DType::U8));
  for (DType eight : {DType::F8E4M3, DType::F8E5M2}) {
    const Tensor as_eight = Tensor::wrap(all->data_ptr(), {256}, eight, Device::cpu(), all);
    require_same_floats(as_eight.to(test::gpu()).to(DType::F32), as_eight.to(DType::F32));
  }
}
