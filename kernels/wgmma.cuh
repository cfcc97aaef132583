// Hopper warpgroup MMA (wgmma, sm_90a) for the attention kernels (attention.cu, attention_fa3.cu,
// attention_sage8.cu):
// shared-memory descriptors of the 128-byte-swizzled operand layouts, the instructions at the
// shapes the kernels issue, and the fences that keep the compiler from moving their register
// operands. The layouts: a tile is stored as column blocks of rows x 64 bf16 (128-byte rows, the
// 16-byte chunk c of row r at chunk c ^ (r % 8)), each block 1024-byte aligned; K-major for the
// operands whose rows run along M or N (Q, K), and the same bytes read as the N-major (transposed)
// operand for V in P·V. Accumulator layout of an m64nN instruction: thread (warp w of the
// warpgroup, lane = 4 g + tig) holds d[j][e] at row 16 w + g + 8 (e >= 2), column 8 j + 2 tig +
// (e & 1); P's A fragments (register operand) follow the same rows.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace ltx2::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// A wgmma shared-memory descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

// Descriptor of an N-major (transposed) 128-byte-swizzled operand: 8-row groups along K 1024 bytes
// apart, 64-column blocks along N `block_bytes` apart.
__device__ __forceinline__ uint64_t sw128_desc_mn(uint32_t addr, uint32_t block_bytes) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(block_bytes >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

// The wgmma instructions exist only in the sm_90a machine code; the compute_90 PTX fallback
// (never chosen on a Hopper GPU) traps instead.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LTX2_WGMMA_ASM(...) asm volatile(__VA_ARGS__)
#else
#define LTX2_WGMMA_ASM(...) __trap()
#endif

__device__ __forceinline__ void wgmma_fence() {
  LTX2_WGMMA_ASM("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  LTX2_WGMMA_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N committed groups of this warpgroup are still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  LTX2_WGMMA_ASM("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void wgmma_wait_all() {
  wgmma_wait<0>();
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Pins registers around wgmma: the compiler must not move an operand across the fence or wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(r[i][e])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}

// The accumulator operands of 8-column block i: d[i][0..3].
#define LTX2_WGMMA_ACC(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define LTX2_WGMMA_ACC8(i)                                                                \
  LTX2_WGMMA_ACC(i), LTX2_WGMMA_ACC(i + 1), LTX2_WGMMA_ACC(i + 2), LTX2_WGMMA_ACC(i + 3), \
      LTX2_WGMMA_ACC(i + 4), LTX2_WGMMA_ACC(i + 5), LTX2_WGMMA_ACC(i + 6), LTX2_WGMMA_ACC(i + 7)

// d[64 x 64] += A[64 x 16] · B[64 x 16]ᵀ by the warpgroup, both operands in shared memory.
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[8][4], uint64_t desc_a, uint64_t desc_b) {
  LTX2_WGMMA_ASM(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31}, %32, %33, 1, 1, 1, 0, 0;\n"
      : LTX2_WGMMA_ACC8(0)
      : "l"(desc_a), "l"(desc_b));
}

// d[64 x 128] (+)= A[64 x 16] · B[128 x 16]ᵀ, both in shared memory; `accumulate` false overwrites d
// (the first k-step of a product, so d needs no zeroing).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[16][4], uint64_t desc_a, uint64_t desc_b,
                                                 bool accumulate) {
  LTX2_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
      "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : LTX2_WGMMA_ACC8(0), LTX2_WGMMA_ACC8(8)
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
}

// d[64 x N] += A[64 x 16] · B[16 x N] by the warpgroup: A from registers (each warp its 16 rows in
// the mma.sync A-fragment layout), B (V) in shared memory as N-major 128-byte-swizzled column
// blocks of 64 (the transposed operand), described by desc_b (sw128_desc_mn).
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[8][4], const uint32_t (&a)[4],
                                                   uint64_t desc_b) {
  LTX2_WGMMA_ASM(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31}, {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
      : LTX2_WGMMA_ACC8(0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
}
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[16][4], const uint32_t (&a)[4],
                                                    uint64_t desc_b) {
  LTX2_WGMMA_ASM(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
      "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, 1, 1, 1, "
      "1;\n"
      : LTX2_WGMMA_ACC8(0), LTX2_WGMMA_ACC8(8)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
}

// The 8-bit products of the 8-bit attention (attention_sage8.cu), k-steps of 32 elements (32
// bytes: the same descriptor steps as bf16's 16), both operands K-major (8-bit wgmma has no
// transposed form). d[64 x 128] (+)= A[64 x 32] · B[128 x 32]ᵀ with int8 operands in shared
// memory and int32 accumulation (exact).
#define LTX2_WGMMA_IACC(i) "+r"(d[i][0]), "+r"(d[i][1]), "+r"(d[i][2]), "+r"(d[i][3])
#define LTX2_WGMMA_IACC8(i)                                                                   \
  LTX2_WGMMA_IACC(i), LTX2_WGMMA_IACC(i + 1), LTX2_WGMMA_IACC(i + 2), LTX2_WGMMA_IACC(i + 3), \
      LTX2_WGMMA_IACC(i + 4), LTX2_WGMMA_IACC(i + 5), LTX2_WGMMA_IACC(i + 6), LTX2_WGMMA_IACC(i + 7)
__device__ __forceinline__ void wgmma_m64n128k32_s8(uint32_t (&d)[16][4], uint64_t desc_a, uint64_t desc_b,
                                                    bool accumulate) {
  LTX2_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
      "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p;\n}\n"
      : LTX2_WGMMA_IACC8(0), LTX2_WGMMA_IACC8(8)
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
}
#undef LTX2_WGMMA_IACC8
#undef LTX2_WGMMA_IACC

// d[64 x 128] (+)= A[64 x 32] · B[128 x 32]ᵀ with e4m3 operands, A from registers (a[0]: row g,
// k 4 tig .. + 3; a[1]: row g + 8, the same k; a[2], a[3]: k 16 + 4 tig .. + 3; byte 0 the lowest
// k), B in shared memory; float32 accumulation (narrower inside the tensor core: see the kernel).
__device__ __forceinline__ void wgmma_m64n128k32_e4m3_rs(float (&d)[16][4], const uint32_t (&a)[4],
                                                         uint64_t desc_b, bool accumulate) {
  LTX2_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
      "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
      "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
      "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, "
      "1;\n}\n"
      : LTX2_WGMMA_ACC8(0), LTX2_WGMMA_ACC8(8)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
}

// The same with n = 136: B's 17 eight-row groups, the last one beyond a 128-row tile (the
// 8-bit attention keeps rows of ones there, so that d's columns 128-135 are A's row sums).
__device__ __forceinline__ void wgmma_m64n136k32_e4m3_rs(float (&d)[17][4], const uint32_t (&a)[4],
                                                         uint64_t desc_b, bool accumulate) {
  LTX2_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %73, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n136k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, "
      "%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
      "%26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, "
      "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
      "%60, %61, %62, %63, %64, %65, %66, %67}, {%68, %69, %70, %71}, %72, p, 1, 1;\n}\n"
      : LTX2_WGMMA_ACC8(0), LTX2_WGMMA_ACC8(8), LTX2_WGMMA_ACC(16)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int(accumulate)));
}

#undef LTX2_WGMMA_ACC8
#undef LTX2_WGMMA_ACC

}  // namespace ltx2::cuda
