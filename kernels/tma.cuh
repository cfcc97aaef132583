// Hopper's asynchronous copy and synchronisation primitives for the warp-specialised kernels
// (attention_fa3.cu, attention_sage8.cu): mbarriers with transaction counts, bulk tensor copies
// (TMA) that complete on them, and the named barriers two consumer warpgroups take turns on. The
// tensor maps the copies read are made on the host (tensor_map.h).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace ltx2::cuda {

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the copy engine (before the block's first sync).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Arrives and adds `bytes` to the transactions the current phase waits for.
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the barrier's phase with this parity has completed (a fresh barrier counts its
// previous phase, parity 1, as complete).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// The box of a 4-d tensor map at coordinates (c0 innermost .. c3) into shared memory at dst,
// completing on the mbarrier `bar`. Coordinates past the tensor's extent read zeros.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap& map, uint32_t bar, int c0,
                                            int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
      "%4, "
      "%5}], [%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// Two consumer warpgroups taking turns (named barriers first_id and first_id + 1; 0 is
// __syncthreads): a consumer opens its window with turn_wait and hands the next one to the other
// with turn_pass. Consumer 1 calls turn_start once first, so that consumer 0 opens the first window.
template <int FirstId>
struct TurnBarriers {
  __device__ __forceinline__ static void turn_start() {
    asm volatile("bar.arrive %0, 256;\n" ::"n"(FirstId) : "memory");
  }
  __device__ __forceinline__ static void turn_wait(int consumer) {
    asm volatile("bar.sync %0, 256;\n" ::"r"(FirstId + consumer) : "memory");
  }
  __device__ __forceinline__ static void turn_pass(int consumer) {
    asm volatile("bar.arrive %0, 256;\n" ::"r"(FirstId + (consumer ^ 1)) : "memory");
  }
};

}  // namespace ltx2::cuda
