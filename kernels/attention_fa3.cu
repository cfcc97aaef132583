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
//   barriers, "ping-pong"), so one's softmax overlaps the other's products. The producer's and the
//   consumers' loops are kernels/kv_pipeline.cuh's, shared with the 8-bit kernel.
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
#include "kernels/kv_pipeline.cuh"
#include "kernels/tensor_map.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kHeadDim = 128;
constexpr int kBlockM = 128;  // query rows per block, 64 per consumer
constexpr int kStages = 2;    // K/V ring depth
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr uint32_t kQBlockBytes = kBlockM * 128;  // a 64-column block of the Q tile: 16 KiB

// The key tile: kBlockN keys. (FlashAttention-3's 176 at this head dim ran within 1.5% of it on
// the H200, faster at 24,576 keys and slower at 1,024, so the simpler 128 stays.)
constexpr int kBlockN = 128;
constexpr int kBlocks = kBlockN / 8;                     // 8-key blocks of a score row
constexpr uint32_t kKvColumnBlockBytes = kBlockN * 128;  // a 64-column block of K or V
constexpr uint32_t kKvBytes = 2 * kKvColumnBlockBytes;   // a K or V tile
constexpr int kSmemBytes = int(2 * kQBlockBytes + 2 * kStages * kKvBytes) + KvRing<kStages>::kBytes + 1024;
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
__device__ __forceinline__ void online_softmax(float (&s)[kBlocks][4], float (&row_max)[2],
                                               float (&row_sum)[2], float (&rescale)[2], int valid_keys,
                                               float scale_log2) {
  const int tig = threadIdx.x & 3;
  if (valid_keys < kBlockN) {
#pragma unroll
    for (int nb = 0; nb < kBlocks; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (nb * 8 + 2 * tig + (e & 1) >= valid_keys) s[nb][e] = -INFINITY;
  }
  // Four partial maxima and sums per row (8-key blocks nb % 4): four short dependency chains
  // instead of one of 32, for the one warp per scheduler a consumer has.
  float part_max[2][4];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int i = 0; i < 4; ++i) part_max[r][i] = fmaxf(s[i][2 * r], s[i][2 * r + 1]);
#pragma unroll
  for (int nb = 4; nb < kBlocks; ++nb)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      part_max[r][nb % 4] = fmaxf(part_max[r][nb % 4], fmaxf(s[nb][2 * r], s[nb][2 * r + 1]));
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = fmaxf(fmaxf(part_max[r][0], part_max[r][1]), fmaxf(part_max[r][2], part_max[r][3]));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float new_max = fmaxf(row_max[r], tile_max);
    base[r] = new_max == -INFINITY ? 0.f : new_max * scale_log2;  // log2 units; no NaN for empty rows
    rescale[r] = exp2_ftz(row_max[r] * scale_log2 - base[r]);
    row_max[r] = new_max;
  }
  float part_sum[2][4] = {};
#pragma unroll
  for (int nb = 0; nb < kBlocks; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float pe = exp2_ftz(fmaf(s[nb][e], scale_log2, -base[e >> 1]));
      s[nb][e] = pe;
      part_sum[e >> 1][nb % 4] += pe;
    }
#pragma unroll
  for (int r = 0; r < 2; ++r)
    row_sum[r] =
        row_sum[r] * rescale[r] + ((part_sum[r][0] + part_sum[r][1]) + (part_sum[r][2] + part_sum[r][3]));
}

// P as the A fragments of the P·V product: two adjacent 8-key blocks of the score accumulator per
// 16-key k-step.
__device__ __forceinline__ void pack_p(uint32_t (&pa)[kBlockN / 16][4], const float (&s)[kBlocks][4]) {
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
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
  const auto k_tile = [&](int s) { return base + 2 * kQBlockBytes + kKvBytes * s; };
  const auto v_tile = [&](int s) { return base + 2 * kQBlockBytes + kKvBytes * (kStages + s); };
  const KvRing<kStages> ring{base + 2 * kQBlockBytes + kKvBytes * 2 * kStages};

  const int warpgroup = threadIdx.x / 128;
  const int bh = blockIdx.y, b = bh / p.H, h = bh % p.H, h_kv = h / p.kv_group;
  const int m0 = blockIdx.x * kBlockM;
  const int n_tiles = (p.Tk + kBlockN - 1) / kBlockN;

  if (threadIdx.x == 0) ring.init(4 * kConsumers);
  __syncthreads();

  if (warpgroup == 0) {  // the producer
    LTX2_WGMMA_ASM("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (threadIdx.x == 0) {
      const auto load_kv = [&](const CUtensorMap& map, uint32_t tile, int j, uint32_t bar) {
        tma_load_4d(tile, map, bar, 0, j * kBlockN, h_kv, b);
        tma_load_4d(tile + kKvColumnBlockBytes, map, bar, 64, j * kBlockN, h_kv, b);
      };
      produce_tiles(
          ring, n_tiles, 2 * kQBlockBytes, kKvBytes,
          [&](uint32_t bar) {
            tma_load_4d(q_tile, q_map, bar, 0, m0, h, b);
            tma_load_4d(q_tile + kQBlockBytes, q_map, bar, 64, m0, h, b);
          },
          [&](int s, int j, uint32_t bar) { load_kv(k_map, k_tile(s), j, bar); },
          [&](int s, int j, uint32_t bar) { load_kv(v_map, v_tile(s), j, bar); });
    }
    return;
  }

  LTX2_WGMMA_ASM("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  const int consumer = warpgroup - 1;
  const int warp = (threadIdx.x / 32) % 4, g = (threadIdx.x % 32) / 4;
  float o[16][4];
#pragma unroll
  for (int i = 0; i < 16; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f}, rescale[2];
  float s[kBlocks][4];
  uint32_t pa[kBlockN / 16][4];
  const uint32_t q_rows = q_tile + consumer * 64 * 128;  // this consumer's 64 rows of each column block

  consume_tiles<kStages, Turns>(
      ring, consumer, n_tiles,
      [&](int stage) {
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 16; ++kk) {
          const uint32_t in_block = (kk % 4) * 32;
          wgmma_m64n128k16(s, sw128_desc(q_rows + (kk / 4) * kQBlockBytes + in_block),
                           sw128_desc(k_tile(stage) + (kk / 4) * kKvColumnBlockBytes + in_block), kk > 0);
        }
        wgmma_commit();
      },
      [&](int stage) {
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk)
          wgmma_m64n128k16_rs(o, pa[kk], sw128_desc_mn(v_tile(stage) + kk * 2048, kKvColumnBlockBytes));
        wgmma_commit();
      },
      [&] { fence_regs(s); },
      [&] {
        fence_regs(o);
        fence_regs(pa);
      },
      [&](int j) {
        online_softmax(s, row_max, row_sum, rescale, min(kBlockN, p.Tk - j * kBlockN), p.scale_log2);
      },
      [&] {
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          o[i][0] *= rescale[0];
          o[i][1] *= rescale[0];
          o[i][2] *= rescale[1];
          o[i][3] *= rescale[1];
        }
      },
      [&] { pack_p(pa, s); }, [] {});

  const float sums[2] = {quad_sum(row_sum[0]), quad_sum(row_sum[1])};  // the quad's partial sums
  store_output(
      o, sums, m0 + consumer * 64 + warp * 16 + g, p.Tq,
      [&](int row) { return p.o + b * p.o_strides[0] + h * p.o_strides[1] + row * p.o_strides[2]; },
      [](int) { return 1.f; });
}

// The bulk-copy map of a [B, H, T, 128] operand: dims (head dim, token, head, batch), boxes of one
// swizzle-128 column block (64 columns) x `rows` rows, rows past T zero-filled.
CUtensorMap tile_map(const Tensor& t, uint32_t rows) {
  return tensor_map_4d("attention (fa3)", t, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                       {uint64_t(t.size(3)), uint64_t(t.size(2)), uint64_t(t.size(1)), uint64_t(t.size(0))},
                       {uint64_t(t.stride(2)) * 2, uint64_t(t.stride(1)) * 2, uint64_t(t.stride(0)) * 2},
                       {64, rows, 1, 1});
}

void launch(const Tensor& q, const Tensor& k, const Tensor& v, const Fa3Params& p) {
  const CUtensorMap q_map = tile_map(q, kBlockM), k_map = tile_map(k, kBlockN), v_map = tile_map(v, kBlockN);
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
  Fa3Params p{};
  p.o = static_cast<bf16*>(out.data_ptr());
  for (int d = 0; d < 3; ++d) p.o_strides[d] = out.stride(d);
  p.H = static_cast<int>(q.size(1));
  p.Tq = static_cast<int>(q.size(2));
  p.Tk = static_cast<int>(k.size(2));
  p.kv_group = static_cast<int>(q.size(1) / k.size(1));
  p.scale_log2 = scale * kLog2e;
  launch(q, k, v, p);
}

}  // namespace ltx2::cuda
