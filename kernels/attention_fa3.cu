// Attention in FlashAttention-3's structure on Hopper (sm_90a), unmasked bf16 at head dim 128.
//
// A block owns 128 query rows of one (batch, head) and runs three warpgroups:
// - the producer (warpgroup 0, its registers given away by setmaxnreg): one thread loads the Q
//   tile once and the K and V tiles of 128 keys into a ring of kStages buffers by bulk tensor
//   copies (TMA), each completing on its buffer's "full" mbarrier; it refills a buffer when the
//   consumers have arrived on its "empty" mbarrier;
// - two consumers (warpgroups 1 and 2), 64 query rows each, which run both products on wgmma:
//   S = Q·Kᵀ from shared memory, O += P·V with P from registers. Within a consumer the softmax of
//   tile j runs while the tensor cores compute P_{j-1}·V_{j-1} (S_j and that product are issued
//   together, then waited for one at a time), and the two consumers take turns issuing (two named
//   barriers, "ping-pong"), so one's softmax overlaps the other's products.
// Shared memory (1024-byte aligned; 160 KiB at kStages = 2): the Q tile, kStages K tiles, kStages
// V tiles, each 128 rows x 128 columns stored as two 64-column blocks in the 128-byte-swizzled
// layout of kernels/wgmma.cuh (the bulk copy's SWIZZLE_128B writes exactly that layout), then the
// mbarriers. Rows past Tq or Tk are zero-filled by the copy; keys past Tk are excluded from the
// softmax of the last tile. The online softmax is the wgmma kernel's (attention.cu): running max
// on the raw scores, scale * log2 e folded into one FMA before exp2_ftz, float32 statistics, the row
// sums reduced across the quad at the end. The output is written from registers through its
// strides. Grouped-query attention reads KV head h / (H / Hkv).
#include <atomic>
#include <cmath>

#include "kernels/attention_fa3.h"
#include "kernels/common.cuh"
#include "kernels/tensor_map.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kHeadDim = 128;
constexpr int kBlockM = 128;  // query rows per block, 64 per consumer
constexpr int kBlockN = 128;  // keys per K/V tile
constexpr int kStages = 2;    // K/V ring depth
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr uint32_t kTileBytes = kBlockN * kHeadDim * 2;  // a Q, K or V tile: 32 KiB
constexpr uint32_t kColumnBlockBytes = kTileBytes / 2;   // its 64-column block: 128 rows x 128 bytes
constexpr int kBarriers = 1 + 4 * kStages;               // q_full, k/v full and empty per stage
constexpr int kSmemBytes = int(kTileBytes) * (1 + 2 * kStages) + 8 * kBarriers + 1024;
static_assert(kSmemBytes <= 227 * 1024, "more shared memory than an sm_90 block may have");
static_assert(kBlockM == 64 * kConsumers, "each consumer owns one 64-row wgmma tile");
using Turns = TurnBarriers<1>;
constexpr float kLog2e = 1.4426950408889634f;

struct Fa3Params {
  bf16* o;
  int64_t o_strides[3];  // batch, head, token (dim stride 1)
  int H, Tq, Tk;
  int kv_group;      // query heads per KV head
  float scale_log2;  // the softmax scale times log2 e
};

// The consumers' online softmax over one 64 x 128 score tile (in place: scores in, probabilities
// out), the thread's two rows' running max and partial sums updated; `rescale` is what the O rows
// accumulated so far must be multiplied by. Keys from `valid_keys` on are excluded.
__device__ __forceinline__ void online_softmax(float (&s)[16][4], float (&row_max)[2], float (&row_sum)[2],
                                               float (&rescale)[2], int valid_keys, float scale_log2) {
  const int tig = threadIdx.x & 3;
  if (valid_keys < kBlockN) {
#pragma unroll
    for (int nb = 0; nb < 16; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (nb * 8 + 2 * tig + (e & 1) >= valid_keys) s[nb][e] = -INFINITY;
  }
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nb = 0; nb < 16; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[nb][e]);
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
    tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
    const float new_max = fmaxf(row_max[r], tile_max[r]);
    base[r] = new_max == -INFINITY ? 0.f : new_max * scale_log2;  // log2 units; no NaN for empty rows
    rescale[r] = exp2_ftz(row_max[r] * scale_log2 - base[r]);
    row_max[r] = new_max;
    row_sum[r] *= rescale[r];
  }
#pragma unroll
  for (int nb = 0; nb < 16; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float pe = exp2_ftz(fmaf(s[nb][e], scale_log2, -base[e >> 1]));
      s[nb][e] = pe;
      row_sum[e >> 1] += pe;
    }
}

// P as the A fragments of the P·V product: two adjacent 8-key blocks of the score accumulator per
// 16-key k-step.
__device__ __forceinline__ void pack_p(uint32_t (&pa)[8][4], const float (&s)[16][4]) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    pa[kk][0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
    pa[kk][1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
    pa[kk][2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pa[kk][3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    fa3_attention_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                         const __grid_constant__ CUtensorMap v_map, const Fa3Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t q_tile = base;
  const auto k_tile = [&](int s) { return base + kTileBytes * (1 + s); };
  const auto v_tile = [&](int s) { return base + kTileBytes * (1 + kStages + s); };
  const uint32_t bars = base + kTileBytes * (1 + 2 * kStages);
  const uint32_t q_full = bars;
  const auto k_full = [&](int s) { return bars + 8 * (1 + s); };
  const auto v_full = [&](int s) { return bars + 8 * (1 + kStages + s); };
  const auto k_empty = [&](int s) { return bars + 8 * (1 + 2 * kStages + s); };
  const auto v_empty = [&](int s) { return bars + 8 * (1 + 3 * kStages + s); };

  const int warpgroup = threadIdx.x / 128;
  const int bh = blockIdx.y, b = bh / p.H, h = bh % p.H, h_kv = h / p.kv_group;
  const int m0 = blockIdx.x * kBlockM;
  const int n_tiles = (p.Tk + kBlockN - 1) / kBlockN;

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), 4 * kConsumers);  // one arrival per consumer warp
      mbar_init(v_empty(s), 4 * kConsumers);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warpgroup == 0) {  // the producer
    LTX2_WGMMA_ASM("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (threadIdx.x == 0) {
      mbar_expect_tx(q_full, kTileBytes);
      tma_load_4d(q_tile, q_map, q_full, 0, m0, h, b);
      tma_load_4d(q_tile + kColumnBlockBytes, q_map, q_full, 64, m0, h, b);
      for (int j = 0; j < n_tiles; ++j) {
        const int s = j % kStages;
        const uint32_t free_parity = ((j / kStages) & 1) ^ 1;
        mbar_wait(k_empty(s), free_parity);
        mbar_expect_tx(k_full(s), kTileBytes);
        tma_load_4d(k_tile(s), k_map, k_full(s), 0, j * kBlockN, h_kv, b);
        tma_load_4d(k_tile(s) + kColumnBlockBytes, k_map, k_full(s), 64, j * kBlockN, h_kv, b);
        mbar_wait(v_empty(s), free_parity);
        mbar_expect_tx(v_full(s), kTileBytes);
        tma_load_4d(v_tile(s), v_map, v_full(s), 0, j * kBlockN, h_kv, b);
        tma_load_4d(v_tile(s) + kColumnBlockBytes, v_map, v_full(s), 64, j * kBlockN, h_kv, b);
      }
    }
    return;
  }

  LTX2_WGMMA_ASM("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  const int consumer = warpgroup - 1;
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;
  // Consumer 0 issues first; every issue window is opened by turn_wait and handed on by turn_pass.
  if (consumer == 1) Turns::turn_start();

  float o[16][4];
#pragma unroll
  for (int i = 0; i < 16; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, rescale[2];
  float s[16][4];
  uint32_t pa[8][4];
  const uint32_t q_rows = q_tile + consumer * 64 * 128;  // this consumer's 64 rows of each column block

  const auto issue_qk = [&](int stage) {
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      const uint32_t offset = (kk / 4) * kColumnBlockBytes + (kk % 4) * 32;
      wgmma_m64n128k16(s, sw128_desc(q_rows + offset), sw128_desc(k_tile(stage) + offset), kk > 0);
    }
    wgmma_commit();
  };
  const auto issue_pv = [&](int stage) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
      wgmma_m64n128k16_rs(o, pa[kk], sw128_desc_mn(v_tile(stage) + kk * 2048, kColumnBlockBytes));
    wgmma_commit();
  };
  const auto release = [&](uint32_t bar) {
    if (lane == 0) mbar_arrive(bar);
  };

  mbar_wait(q_full, 0);
  mbar_wait(k_full(0), 0);
  Turns::turn_wait(consumer);
  fence_regs(s);
  wgmma_fence();
  issue_qk(0);
  Turns::turn_pass(consumer);
  wgmma_wait<0>();
  fence_regs(s);
  release(k_empty(0));
  online_softmax(s, row_max, row_sum, rescale, min(kBlockN, p.Tk), p.scale_log2);
  pack_p(pa, s);

  for (int j = 1; j < n_tiles; ++j) {
    const int ks = j % kStages, vs = (j - 1) % kStages;
    mbar_wait(k_full(ks), (j / kStages) & 1);
    mbar_wait(v_full(vs), ((j - 1) / kStages) & 1);
    Turns::turn_wait(consumer);
    fence_regs(s);
    fence_regs(o);
    fence_regs(pa);
    wgmma_fence();
    issue_qk(ks);
    issue_pv(vs);
    Turns::turn_pass(consumer);
    wgmma_wait<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    fence_regs(s);
    release(k_empty(ks));
    online_softmax(s, row_max, row_sum, rescale, min(kBlockN, p.Tk - j * kBlockN), p.scale_log2);
    wgmma_wait<0>();
    fence_regs(o);
    fence_regs(pa);
    release(v_empty(vs));
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      o[i][0] *= rescale[0];
      o[i][1] *= rescale[0];
      o[i][2] *= rescale[1];
      o[i][3] *= rescale[1];
    }
    pack_p(pa, s);
  }

  const int last = (n_tiles - 1) % kStages;
  mbar_wait(v_full(last), ((n_tiles - 1) / kStages) & 1);
  Turns::turn_wait(consumer);
  fence_regs(o);
  fence_regs(pa);
  wgmma_fence();
  issue_pv(last);
  // Consumer 0 opened one window fewer than consumer 1 was passed (the start's arrival above), so
  // only it passes the last turn: every arrival on a turn barrier is then matched by a wait.
  if (consumer == 0) Turns::turn_pass(consumer);
  wgmma_wait<0>();
  fence_regs(o);

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = row_sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const int row = m0 + consumer * 64 + warp * 16 + g + r * 8;
    if (row >= p.Tq) continue;
    bf16* orow = p.o + b * p.o_strides[0] + h * p.o_strides[1] + row * p.o_strides[2];
#pragma unroll
    for (int db = 0; db < 16; ++db)
      *reinterpret_cast<uint32_t*>(orow + db * 8 + 2 * tig) =
          pack_bf16(o[db][2 * r] * inv, o[db][2 * r + 1] * inv);
  }
}

// The bulk-copy map of a [B, H, T, 128] operand: dims (head dim, token, head, batch), boxes of 64
// columns x 128 rows (one swizzle-128 column block), rows past T zero-filled.
CUtensorMap tile_map(const Tensor& t) {
  return tensor_map_4d("attention (fa3)", t, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                       {uint64_t(t.size(3)), uint64_t(t.size(2)), uint64_t(t.size(1)), uint64_t(t.size(0))},
                       {uint64_t(t.stride(2)) * 2, uint64_t(t.stride(1)) * 2, uint64_t(t.stride(0)) * 2},
                       {64, kBlockN, 1, 1});
}

bool tma_loadable(const Tensor& t) {
  if (t.dtype() != DType::BF16 || t.dim() != 4 || t.size(3) != kHeadDim || t.stride(3) != 1) return false;
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  for (int d = 0; d < 3; ++d)
    if (t.stride(d) <= 0 || t.stride(d) % 8 != 0 || t.stride(d) >= (int64_t(1) << 39)) return false;
  return true;
}

}  // namespace

bool fa3_attention_takes(const Tensor& q, const Tensor& k, const Tensor& v) {
  return tma_loadable(q) && tma_loadable(k) && tma_loadable(v) && q.size(2) > 0 && k.size(2) > 0 &&
         k.size(2) == v.size(2) && k.size(1) == v.size(1) && q.size(1) % k.size(1) == 0 &&
         q.size(0) * q.size(1) <= 65535 && q.size(2) < (int64_t(1) << 31) && k.size(2) < (int64_t(1) << 31);
}

void fa3_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale) {
  LTX2_CHECK(fa3_attention_takes(q, k, v), "attention (fa3): cannot take q {} k {} v {}", q.str(), k.str(),
             v.str());
  use_device(q);
  const CUtensorMap q_map = tile_map(q), k_map = tile_map(k), v_map = tile_map(v);
  Fa3Params p{};
  p.o = static_cast<bf16*>(out.data_ptr());
  for (int d = 0; d < 3; ++d) p.o_strides[d] = out.stride(d);
  p.H = static_cast<int>(q.size(1));
  p.Tq = static_cast<int>(q.size(2));
  p.Tk = static_cast<int>(k.size(2));
  p.kv_group = static_cast<int>(q.size(1) / k.size(1));
  p.scale_log2 = scale * kLog2e;

  // Raising the shared-memory limit is per device; once each is enough.
  static std::atomic<uint64_t> configured_devices{0};
  const uint64_t bit = uint64_t(1) << (q.device().index % 64);
  if (!(configured_devices.load() & bit)) {
    LTX2_CUDA_CHECK(
        cudaFuncSetAttribute(fa3_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    configured_devices |= bit;
  }
  const dim3 grid(unsigned((p.Tq + kBlockM - 1) / kBlockM), unsigned(q.size(0) * q.size(1)));
  fa3_attention_kernel<<<grid, kThreads, kSmemBytes>>>(q_map, k_map, v_map, p);
  check_launch();
}

}  // namespace ltx2::cuda
