// The pipeline the warp-specialised attention kernels share (attention_fa3.cu in bf16,
// attention_sage8.cu in 8 bits): a producer thread that loads a query tile once and the key and
// value tiles into a ring of Stages shared-memory buffers by bulk tensor copies, and two consumer
// warpgroups that take turns issuing their products (FlashAttention-3's ping-pong) and overlap
// the softmax of key tile j with the product of tile j - 1 (its intra-warpgroup overlap). What a
// tile holds, the products and the softmax are the kernels' own, given as callables.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"

namespace ltx2::cuda {

// The ring's mbarriers in shared memory (kBytes from `bars`, 8-byte aligned): Q's "full", and per
// stage K's and V's "full" (the producer's copies landed: one arrival plus the bytes) and "empty"
// (every consumer warp is done with the buffer: one arrival per warp).
template <int Stages>
struct KvRing {
  static constexpr int kBytes = 8 * (1 + 4 * Stages);
  uint32_t bars;

  __device__ __forceinline__ uint32_t q_full() const { return bars; }
  __device__ __forceinline__ uint32_t k_full(int s) const { return bars + 8 * (1 + s); }
  __device__ __forceinline__ uint32_t v_full(int s) const { return bars + 8 * (1 + Stages + s); }
  __device__ __forceinline__ uint32_t k_empty(int s) const { return bars + 8 * (1 + 2 * Stages + s); }
  __device__ __forceinline__ uint32_t v_empty(int s) const { return bars + 8 * (1 + 3 * Stages + s); }

  // By one thread, before the block's first __syncthreads.
  __device__ __forceinline__ void init(int consumer_warps) const {
    mbar_init(q_full(), 1);
    for (int s = 0; s < Stages; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), consumer_warps);
      mbar_init(v_empty(s), consumer_warps);
    }
    mbar_init_fence();
  }
};

// The producer thread: load_q(bar) once (q_bytes), then for each key tile j load_k(stage, j, bar)
// and load_v(stage, j, bar) (kv_bytes each) into stage j % Stages once the consumers released it.
template <int Stages, class LoadQ, class LoadK, class LoadV>
__device__ __forceinline__ void produce_tiles(const KvRing<Stages>& ring, int n_tiles, uint32_t q_bytes,
                                              uint32_t kv_bytes, LoadQ&& load_q, LoadK&& load_k,
                                              LoadV&& load_v) {
  mbar_expect_tx(ring.q_full(), q_bytes);
  load_q(ring.q_full());
  for (int j = 0; j < n_tiles; ++j) {
    const int s = j % Stages;
    const uint32_t free_parity = ((j / Stages) & 1) ^ 1;
    mbar_wait(ring.k_empty(s), free_parity);
    mbar_expect_tx(ring.k_full(s), kv_bytes);
    load_k(s, j, ring.k_full(s));
    mbar_wait(ring.v_empty(s), free_parity);
    mbar_expect_tx(ring.v_full(s), kv_bytes);
    load_v(s, j, ring.v_full(s));
  }
}

// One consumer warpgroup's loop over n_tiles >= 1 key tiles, consumer 0 or 1 of two taking turns
// (Turns: kernels/tma.cuh's TurnBarriers). The callables:
//   issue_scores(stage), issue_product(stage): issue S_j = Q·K_jᵀ, and P·V_{j-1}, on wgmma (each
//     one commit group);
//   pin_scores(), pin_product(): fence_regs on S, and on the product's registers (O, P), around
//     the issues and waits, so that the compiler moves none of them across;
//   scores_ready(j): S_j is complete (the softmax of tile j; the product of tile j - 1 may still
//     run); product_ready(): the product of tile j - 1 is complete (fold it into O with tile j's
//     rescale); pack(): P from S for the next product; last_product_ready(): the last product is
//     complete.
// K buffers are released as soon as their scores are complete, V buffers when their product is.
template <int Stages, class Turns, class IssueScores, class IssueProduct, class PinScores, class PinProduct,
          class ScoresReady, class ProductReady, class Pack, class LastProductReady>
__device__ __forceinline__ void consume_tiles(const KvRing<Stages>& ring, int consumer, int n_tiles,
                                              IssueScores&& issue_scores, IssueProduct&& issue_product,
                                              PinScores&& pin_scores, PinProduct&& pin_product,
                                              ScoresReady&& scores_ready, ProductReady&& product_ready,
                                              Pack&& pack, LastProductReady&& last_product_ready) {
  const bool lane0 = threadIdx.x % 32 == 0;
  const auto release = [&](uint32_t bar) {
    if (lane0) mbar_arrive(bar);
  };
  if (consumer == 1) Turns::turn_start();  // consumer 0 issues first

  mbar_wait(ring.q_full(), 0);
  mbar_wait(ring.k_full(0), 0);
  Turns::turn_wait(consumer);
  pin_scores();
  wgmma_fence();
  issue_scores(0);
  Turns::turn_pass(consumer);
  wgmma_wait<0>();
  pin_scores();
  release(ring.k_empty(0));
  scores_ready(0);
  pack();

  for (int j = 1; j < n_tiles; ++j) {
    const int ks = j % Stages, vs = (j - 1) % Stages;
    mbar_wait(ring.k_full(ks), (j / Stages) & 1);
    mbar_wait(ring.v_full(vs), ((j - 1) / Stages) & 1);
    Turns::turn_wait(consumer);
    pin_scores();
    pin_product();
    wgmma_fence();
    issue_scores(ks);
    issue_product(vs);
    Turns::turn_pass(consumer);
    wgmma_wait<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    pin_scores();
    release(ring.k_empty(ks));
    scores_ready(j);
    wgmma_wait<0>();
    pin_product();
    release(ring.v_empty(vs));
    product_ready();
    pack();
  }

  const int last = (n_tiles - 1) % Stages;
  mbar_wait(ring.v_full(last), ((n_tiles - 1) / Stages) & 1);
  Turns::turn_wait(consumer);
  pin_product();
  wgmma_fence();
  issue_product(last);
  // Consumer 0 opened one window fewer than consumer 1 was passed (turn_start), so only it passes
  // the last turn: every arrival on a turn barrier is then matched by a wait.
  if (consumer == 0) Turns::turn_pass(consumer);
  wgmma_wait<0>();
  pin_product();
  last_product_ready();
}

// The sum of a value over the four threads of a quad (the threads that share accumulator rows).
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// A consumer's epilogue: its 64 x 128 O rows (o's first 16 column blocks) divided by their softmax
// sums (row_sum: the thread's two rows' whole sums) and multiplied by column_scale(column), stored
// as bf16 at out_row(row) for the thread's rows row0 and row0 + 8 below Tq.
template <int Blocks, class OutRow, class ColumnScale>
__device__ __forceinline__ void store_output(const float (&o)[Blocks][4], const float (&row_sum)[2], int row0,
                                             int Tq, OutRow&& out_row, ColumnScale&& column_scale) {
  static_assert(Blocks >= 16, "O has 128 columns");
  const int tig = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float sum = row_sum[r];
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int row = row0 + 8 * r;
    if (row >= Tq) continue;
    __nv_bfloat16* out = out_row(row);
#pragma unroll
    for (int db = 0; db < 16; ++db) {
      const int col = db * 8 + 2 * tig;
      *reinterpret_cast<uint32_t*>(out + col) =
          pack_bf16(o[db][2 * r] * inv * column_scale(col), o[db][2 * r + 1] * inv * column_scale(col + 1));
    }
  }
}

}  // namespace ltx2::cuda
