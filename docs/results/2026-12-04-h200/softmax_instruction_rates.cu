// Throughput of the softmax's candidate instructions on one SM (results per clock per SM): one
// block of 1,024 threads per SM, eight independent chains a thread. Built and run on the H200 with
// `nvcc -arch=sm_90a -O3 softmax_instruction_rates.cu` (2026-12-04); its output is
// softmax_instruction_rates.txt. A measurement, not part of the build.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstdio>
constexpr int kIters = 4096;
__device__ __forceinline__ float ex2f(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t ex2bf2(uint32_t x) {
  uint32_t y;
  asm volatile("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ uint32_t cvtbf2(float a, float b) {
  uint32_t y;
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ uint16_t cvte4(float a, float b) {
  uint16_t y;
  asm volatile("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ uint16_t cvte4h(uint32_t a) {
  uint16_t y;
  asm volatile("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(y) : "r"(a));
  return y;
}
__device__ __forceinline__ uint32_t ex2h2(uint32_t x) {
  uint32_t y;
  asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ uint32_t cvth2(float a, float b) {
  uint32_t y;
  asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ uint32_t hfma2bf(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t y;
  asm volatile("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(y) : "r"(a), "r"(b), "r"(c));
  return y;
}

template <int K>
__global__ void bench(float* out, long long* clk, float seed) {
  float f[8];
  uint32_t u[8];
  for (int i = 0; i < 8; i++) {
    f[i] = seed * (threadIdx.x + i);
    u[i] = __float_as_uint(f[i]);
  }
  long long t0 = clock64();
  for (int it = 0; it < kIters; it++) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      if (K == 0) f[i] = ex2f(f[i]);
      if (K == 1) u[i] = ex2bf2(u[i]);
      if (K == 2) u[i] = cvtbf2(f[i], __uint_as_float(u[i]));
      if (K == 3) u[i] += cvte4(f[i], __uint_as_float(u[i]));
      if (K == 4) u[i] += cvte4h(u[i]);
      if (K == 5) u[i] = hfma2bf(u[i], u[i], u[i]);
      if (K == 6) f[i] = fmaf(f[i], f[i], f[i]);
      if (K == 7) {
        f[i] = ex2f(f[i]);
        u[i] += cvte4(f[i], f[i]);
      }  // exp + half a pack per element
      if (K == 9) u[i] = ex2h2(u[i]);
      if (K == 10) u[i] = cvth2(f[i], __uint_as_float(u[i]));
      if (K == 11) {
        u[i] = ex2h2(cvth2(f[i], __uint_as_float(u[i])));
        u[i] += cvte4h(u[i]);
      }
      if (K == 8) {
        u[i] = ex2bf2(u[i]);
        u[i] += cvte4h(u[i]);
      }  // bf16x2 exp + pack
    }
  }
  long long t1 = clock64();
  float s = 0;
  for (int i = 0; i < 8; i++) s += f[i] + __uint_as_float(u[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) clk[blockIdx.x] = t1 - t0;
}
template <int K>
void run(const char* name) {
  float* out;
  long long* clk;
  int blocks = 132, threads = 1024;
  cudaMalloc(&out, blocks * threads * 4);
  cudaMalloc(&clk, blocks * 8);
  bench<K><<<blocks, threads>>>(out, clk, 1e-7f);
  cudaDeviceSynchronize();
  bench<K><<<blocks, threads>>>(out, clk, 1e-7f);
  cudaDeviceSynchronize();
  long long c[132];
  cudaMemcpy(c, clk, sizeof c, cudaMemcpyDeviceToHost);
  double ops = double(threads) * kIters * 8;  // per SM (one block per SM)
  printf("%-34s %6.2f instr/clk/SM\n", name, ops / double(c[0]));
  cudaFree(out);
  cudaFree(clk);
}
int main() {
  run<0>("ex2.approx.ftz.f32");
  run<1>("ex2.approx.ftz.bf16x2 (2 values)");
  run<2>("cvt.rn.bf16x2.f32 (2 values)");
  run<3>("cvt.rn.satfinite.e4m3x2.f32 (+add)");
  run<4>("cvt.rn.satfinite.e4m3x2.f16x2 (+add)");
  run<5>("fma.rn.bf16x2");
  run<6>("fma.rn.f32");
  run<7>("ex2.f32 + e4m3x2 cvt (pairs)");
  run<8>("ex2.bf16x2 + e4m3x2.f16x2 cvt");
  run<9>("ex2.approx.f16x2 (2 values)");
  run<10>("cvt.rn.f16x2.f32 (2 values)");
  run<11>("f16x2: cvt + ex2 + e4m3 cvt (2 values)");
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
