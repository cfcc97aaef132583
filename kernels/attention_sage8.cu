// 8-bit attention in SageAttention2's manner on Hopper (sm_90a), unmasked, head dim 128: Q·Kᵀ in
// INT8 with int32 accumulation, P·V in FP8 (e4m3) with float32 accumulation. Numerics:
// - K is smoothed: its mean over the keys (per batch, head and channel) is subtracted first. That
//   shifts every score of a query row by the same amount, which the softmax ignores, and takes the
//   channel offsets that video keys share out of the int8 range.
// - Q is quantized per token (its row's largest magnitude to 127), K per tile of 128 keys; a score
//   is the exact int32 dot times q_scale[row] x k_scale[tile] (the softmax scale and log2 e folded
//   into q_scale).
// - P, in (0, 1] after the running max is subtracted, is multiplied by 448 (e4m3's largest) before
//   rounding to e4m3. The row sums are those rounded values summed by the tensor core: the P·V
//   product runs 136 columns wide over 8 rows of ones after each Vᵀ tile, so O and its sums take
//   the same P, no adds are spent on the sums, and the factor cancels in O / l.
// - V is quantized per channel (each head-dim column's largest magnitude over the keys to 448) and
//   stored transposed ([d][key], K-major as 8-bit wgmma needs). Within every 32 keys the columns are
//   permuted so that the score accumulator's registers are P's A fragments as they stand (the
//   product sums over keys, so the order is free).
// - The tensor core's FP8 accumulator is narrower than float32 (about 13 mantissa bits: the FP8
//   GEMM's measurement in docs/performance.md):
//   each 128-key tile's P·V starts from zero and is added to O in float32 registers.
//
// The kernel has attention_fa3.cu's structure and loops (kernels/kv_pipeline.cuh: a TMA producer
// warpgroup, two consumer warpgroups of 64 query rows in ping-pong, the softmax of tile j
// overlapping P_{j-1}·V_{j-1}) over 8-bit tiles:
// Q, K and Vᵀ tiles are 128 x 128 bytes, one 128-byte-swizzled column block each, in a ring of
// kStages. The quantization runs first, four small kernels below the attention kernel: K's
// channel means and V's channel maxima (kv_stats_kernel), then Q, K and V each into its 8-bit copy.
#include <cuda_fp8.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <type_traits>

#include "kernels/attention_sage8.h"
#include "kernels/common.cuh"
#include "kernels/kv_pipeline.cuh"
#include "kernels/tensor_map.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kHeadDim = 128;
constexpr int kBlockM = 128;  // query rows per block, 64 per consumer
constexpr int kBlockN = 128;  // keys per K/V tile
constexpr int kStages = 4;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr uint32_t kTileBytes = kBlockN * kHeadDim;  // an int8 Q or K tile, an e4m3 Vᵀ tile: 16 KiB
// A Vᵀ stage is its tile and, after it, 8 rows of e4m3 ones (1 KiB, written once): the P·V product
// runs 136 columns wide, and its columns 128-135 are P's row sums.
constexpr uint32_t kOnesBytes = 8 * kBlockN;
constexpr uint32_t kVStageBytes = kTileBytes + kOnesBytes;
constexpr uint8_t kE4m3One = 0x38;
constexpr int kSmemBytes =
    int(kTileBytes * (1 + kStages) + kVStageBytes * kStages) + KvRing<kStages>::kBytes + 1024;
static_assert(kSmemBytes <= 227 * 1024, "more shared memory than an sm_90 block may have");
using Turns = TurnBarriers<1>;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLog2P8 = 8.807354922057604f;  // log2(448): P's factor
constexpr int kChunks = 8;                     // key chunks of the K-mean / V-amax pass

struct Sage8Params {
  bf16* o;
  int64_t o_strides[3];  // batch, head, token (dim stride 1)
  int H, Hkv, Tq, Tk, n_tiles;
  const float* q_scale;  // [B, H, Tq]: per token, softmax scale and log2 e folded in
  const float* k_scale;  // [B, Hkv, n_tiles]
  const float* v_scale;  // [B, Hkv, 128]
};

// float(i) for |i| < 2^22 is the float with bits i + kMagicBits minus kMagic (one integer add; the
// subtraction folds into the FMA that scales the score).
constexpr int kMagicBits = 0x4B400000;
constexpr float kMagic = 12582912.f;  // 1.5 * 2^23

// Four floats to four e4m3 bytes (saturating, round to nearest even), the first in the low byte.
__device__ __forceinline__ uint32_t pack_e4m3(float a, float b, float c, float d) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}

__global__ void __launch_bounds__(kThreads, 1)
    sage8_attention_kernel(const __grid_constant__ CUtensorMap q_map,
                           const __grid_constant__ CUtensorMap k_map,
                           const __grid_constant__ CUtensorMap v_map, const Sage8Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t q_tile = base;
  const auto k_tile = [&](int s) { return base + kTileBytes * (1 + s); };
  const auto v_tile = [&](int s) { return base + kTileBytes * (1 + kStages) + kVStageBytes * s; };
  const KvRing<kStages> ring{base + kTileBytes * (1 + kStages) + kVStageBytes * kStages};

  const int warpgroup = threadIdx.x / 128;
  const int bh = blockIdx.y, b = bh / p.H, h = bh % p.H, h_kv = h / (p.H / p.Hkv);
  const int m0 = blockIdx.x * kBlockM;
  const int n_tiles = p.n_tiles;

  if (threadIdx.x == 0) ring.init(4 * kConsumers);
  for (uint32_t i = threadIdx.x; i < kStages * kOnesBytes / 16; i += kThreads) {
    const uint32_t ones = v_tile(int(i / (kOnesBytes / 16))) + kTileBytes + i % (kOnesBytes / 16) * 16;
    const uint32_t word = kE4m3One * 0x01010101u;
    *reinterpret_cast<uint4*>(smem_raw + (ones - smem_addr(smem_raw))) = make_uint4(word, word, word, word);
  }
  fence_proxy_async();  // the products read the ones through the async proxy
  __syncthreads();

  if (warpgroup == 0) {  // the producer
    LTX2_WGMMA_ASM("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (threadIdx.x == 0)
      produce_tiles(
          ring, n_tiles, kTileBytes, kTileBytes,
          [&](uint32_t bar) { tma_load_4d(q_tile, q_map, bar, 0, m0, h, b); },
          [&](int s, int j, uint32_t bar) { tma_load_4d(k_tile(s), k_map, bar, 0, j * kBlockN, h_kv, b); },
          [&](int s, int j, uint32_t bar) { tma_load_4d(v_tile(s), v_map, bar, j * kBlockN, 0, h_kv, b); });
    return;
  }

  LTX2_WGMMA_ASM("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  const int consumer = warpgroup - 1;
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;

  const int row0 = m0 + consumer * 64 + warp * 16 + g;  // the thread's rows: row0, row0 + 8
  float q_scale[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    q_scale[r] = row < p.Tq ? p.q_scale[int64_t(bh) * p.Tq + row] : 0.f;
  }
  const float* k_scales = p.k_scale + (int64_t(b) * p.Hkv + h_kv) * n_tiles;

  // Columns 128-135 of O and of the last product (o[16], o_tile[16]) are the rows' sums of P (the
  // ones columns), so they are rescaled and summed with the rest.
  float o[17][4], o_tile[17][4];
#pragma unroll
  for (int i = 0; i < 17; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, rescale[2];
  uint32_t s[16][4];  // int32 scores, then P as float bits
  uint32_t pa[4][4];  // P in e4m3, A fragments of the four 32-key k-steps
  const uint32_t q_rows = q_tile + consumer * 64 * 128;

  // The online softmax of tile j: scores to P x 448 (float bits in s), the running maxima
  // updated, `rescale` the factor for the O rows accumulated so far and `rescaled` whether any row
  // of the warp has one other than 1. Only the last tile can be partial (`masked`): the full tiles'
  // code carries no per-key test (it was a fifth of the instructions of every tile).
  bool rescaled = true;
  const auto softmax_tile = [&](int j, auto masked) {
    const int valid = masked ? p.Tk - j * kBlockN : kBlockN;
    const auto key_ok = [&](int nb, int e) { return !masked || nb * 8 + 2 * tig + (e & 1) < valid; };
    const float k_scale = k_scales[j];
    // Four partial maxima per row (8-key blocks nb % 4): short dependency chains.
    int part_max[2][4] = {{INT_MIN, INT_MIN, INT_MIN, INT_MIN}, {INT_MIN, INT_MIN, INT_MIN, INT_MIN}};
#pragma unroll
    for (int nb = 0; nb < 16; ++nb)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int a = key_ok(nb, 2 * r) ? int(s[nb][2 * r]) : INT_MIN;
        const int b = key_ok(nb, 2 * r + 1) ? int(s[nb][2 * r + 1]) : INT_MIN;
        part_max[r][nb % 4] = max(part_max[r][nb % 4], max(a, b));
      }
    float c[2], bias[2];
    bool grew = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      int tile_max = max(max(part_max[r][0], part_max[r][1]), max(part_max[r][2], part_max[r][3]));
      tile_max = max(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = max(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      c[r] = q_scale[r] * k_scale;
      const float new_max = fmaxf(row_max[r], float(tile_max) * c[r]);
      grew |= new_max != row_max[r];
      rescale[r] = new_max != row_max[r] ? exp2_ftz(row_max[r] - new_max) : 1.f;
      row_max[r] = new_max;
      bias[r] = kMagic * c[r] + new_max - kLog2P8;
    }
    rescaled = __any_sync(0xffffffffu, grew);
#pragma unroll
    for (int nb = 0; nb < 16; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float magic = __int_as_float(int(s[nb][e]) + kMagicBits);
        const float pe = exp2_ftz(fmaf(magic, c[e >> 1], -bias[e >> 1]));
        s[nb][e] = __float_as_uint(key_ok(nb, e) ? pe : 0.f);
      }
  };
  const auto softmax = [&](int j) {
    if (p.Tk - j * kBlockN >= kBlockN)
      softmax_tile(j, std::false_type{});
    else
      softmax_tile(j, std::true_type{});
  };
  // P's e4m3 A fragments: k-step kk covers the accumulator's 8-key blocks 4 kk .. 4 kk + 3; the
  // thread's keys 2 tig, 2 tig + 1 of blocks 4 kk and 4 kk + 1 fill its k 4 tig .. + 3, those of
  // blocks 4 kk + 2, + 3 its k 16 + 4 tig .. + 3 (Vᵀ's columns are permuted to match).
  const auto pack_p = [&] {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const uint32_t(&lo)[4] = s[4 * kk + 2 * half];
          const uint32_t(&hi)[4] = s[4 * kk + 2 * half + 1];
          pa[kk][2 * half + r] = pack_e4m3(__uint_as_float(lo[2 * r]), __uint_as_float(lo[2 * r + 1]),
                                           __uint_as_float(hi[2 * r]), __uint_as_float(hi[2 * r + 1]));
        }
  };
  // O (with its sums) += the last product, times the rescale of the tile after it when one was
  // made: a warp-uniform branch, so that once the rows' maxima settle most tiles skip the
  // multiplies (12.7 against 13.4 ms at 24,576 tokens on the H200). Two loops, not a select per
  // element, which the compiler would turn into a multiply by 1.
  const auto add_tile = [&](bool rescale_rows) {
    if (rescale_rows) {
#pragma unroll
      for (int i = 0; i < 17; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][e] = (o[i][e] + o_tile[i][e]) * rescale[e >> 1];
    } else {
#pragma unroll
      for (int i = 0; i < 17; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[i][e] += o_tile[i][e];
    }
  };

  consume_tiles<kStages, Turns>(
      ring, consumer, n_tiles,
      [&](int stage) {
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 32; ++kk)
          wgmma_m64n128k32_s8(s, sw128_desc(q_rows + kk * 32), sw128_desc(k_tile(stage) + kk * 32), kk > 0);
        wgmma_commit();
      },
      [&](int stage) {
#pragma unroll
        for (int kk = 0; kk < kBlockN / 32; ++kk)
          wgmma_m64n136k32_e4m3_rs(o_tile, pa[kk], sw128_desc(v_tile(stage) + kk * 32), kk > 0);
        wgmma_commit();
      },
      [&] { fence_regs(s); },
      [&] {
        fence_regs(o_tile);
        fence_regs(pa);
      },
      softmax, [&] { add_tile(rescaled); }, pack_p, [&] { add_tile(false); });

  const float* v_scale = p.v_scale + (int64_t(b) * p.Hkv + h_kv) * kHeadDim;
  const float row_sums[2] = {o[16][0], o[16][2]};
  store_output(
      o, row_sums, row0, p.Tq,
      [&](int row) { return p.o + b * p.o_strides[0] + h * p.o_strides[1] + row * p.o_strides[2]; },
      [&](int col) { return v_scale[col]; });
}

// ---- The quantization passes. Rows of 128 bf16 are read as 16 packs of 8 (16-byte loads).

// Per (batch, KV head) and chunk of keys: the channels' sums of K and largest magnitudes of V
// (partial[bh][chunk][0][d], [1][d]). Thread (lane row lr = tid / 16, pack c = tid % 16) walks rows
// lr, lr + 16, ... of the chunk; the 16 row lanes are then combined in a fixed order.
__global__ void __launch_bounds__(256)
    kv_stats_kernel(const bf16* k, const bf16* v, int64_t k_sb, int64_t k_sh, int64_t k_st, int64_t v_sb,
                    int64_t v_sh, int64_t v_st, int Hkv, int Tk, float* partial) {
  __shared__ float sums[16][kHeadDim], amaxes[16][kHeadDim];
  const int bh = blockIdx.y, b = bh / Hkv, h = bh % Hkv, chunk = blockIdx.x;
  const int lr = threadIdx.x / 16, c = threadIdx.x % 16;
  const int per_chunk = (Tk + kChunks - 1) / kChunks, t0 = chunk * per_chunk, t1 = min(Tk, t0 + per_chunk);
  float sum[8] = {}, amax[8] = {};
  for (int t = t0 + lr; t < t1; t += 16) {
    float kv[8], vv[8];
    load_pack<bf16, 8>(kv, k + b * k_sb + h * k_sh + int64_t(t) * k_st + c * 8);
    load_pack<bf16, 8>(vv, v + b * v_sb + h * v_sh + int64_t(t) * v_st + c * 8);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      sum[i] += kv[i];
      amax[i] = fmaxf(amax[i], fabsf(vv[i]));
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    sums[lr][c * 8 + i] = sum[i];
    amaxes[lr][c * 8 + i] = amax[i];
  }
  __syncthreads();
  if (threadIdx.x < kHeadDim) {
    float s = 0.f, a = 0.f;
    for (int r = 0; r < 16; ++r) {
      s += sums[r][threadIdx.x];
      a = fmaxf(a, amaxes[r][threadIdx.x]);
    }
    float* out = partial + (int64_t(bh) * kChunks + chunk) * 2 * kHeadDim;
    out[threadIdx.x] = s;
    out[kHeadDim + threadIdx.x] = a;
  }
}

// Q per token: one half-warp per row (8 values a lane); int8 codes and the row's scale, with the
// softmax scale and log2 e folded in.
__global__ void __launch_bounds__(256)
    quantize_q_kernel(const bf16* q, int64_t sb, int64_t sh, int64_t st, int H, int Tq, int64_t rows,
                      float scale_log2, int8_t* q8, float* q_scale) {
  const int64_t row = int64_t(blockIdx.x) * 16 + threadIdx.x / 16;
  const int c = threadIdx.x % 16;
  const bool active = row < rows;  // every lane stays for the shuffles
  float x[8] = {};
  if (active) {
    const int t = int(row % Tq), bh = int(row / Tq), b = bh / H, h = bh % H;
    load_pack<bf16, 8>(x, q + b * sb + h * sh + int64_t(t) * st + c * 8);
  }
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(x[i]));
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float inv = amax > 0.f ? 127.f / amax : 0.f;
  Pack<int8_t, 8> codes;
#pragma unroll
  for (int i = 0; i < 8; ++i) codes.v[i] = int8_t(__float2int_rn(x[i] * inv));
  if (!active) return;
  *reinterpret_cast<Pack<int8_t, 8>*>(q8 + row * kHeadDim + c * 8) = codes;
  if (c == 0) q_scale[row] = (amax > 0.f ? amax / 127.f : 0.f) * scale_log2;
}

// The mean of K's channel d over the keys and the largest magnitude of V's, from kv_stats_kernel's
// chunks (fixed order).
__device__ __forceinline__ float key_mean(const float* partial, int d, int Tk) {
  float s = 0.f;
  for (int i = 0; i < kChunks; ++i) s += partial[i * 2 * kHeadDim + d];
  return s / float(Tk);
}
__device__ __forceinline__ float value_amax(const float* partial, int d) {
  float a = 0.f;
  for (int i = 0; i < kChunks; ++i) a = fmaxf(a, partial[i * 2 * kHeadDim + kHeadDim + d]);
  return a;
}

// K per 128-key tile, smoothed: thread (row lane lr, pack c) holds rows lr + 16 i of the tile in
// registers between the tile's largest magnitude and its codes.
__global__ void __launch_bounds__(256)
    quantize_k_kernel(const bf16* k, int64_t sb, int64_t sh, int64_t st, int Hkv, int Tk,
                      const float* partial, int8_t* k8, float* k_scale) {
  __shared__ float scratch[32];
  const int tile = blockIdx.x, bh = blockIdx.y, b = bh / Hkv, h = bh % Hkv;
  const int lr = threadIdx.x / 16, c = threadIdx.x % 16;
  const float* part = partial + int64_t(bh) * kChunks * 2 * kHeadDim;
  float mean[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) mean[i] = key_mean(part, c * 8 + i, Tk);
  float x[8][8], amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int t = tile * kBlockN + lr + 16 * i;
    if (t < Tk) {
      load_pack<bf16, 8>(x[i], k + b * sb + h * sh + int64_t(t) * st + c * 8);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        x[i][e] -= mean[e];
        amax = fmaxf(amax, fabsf(x[i][e]));
      }
    }
  }
  amax = block_reduce(amax, scratch, warp_max, 0.f);
  const float inv = amax > 0.f ? 127.f / amax : 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int t = tile * kBlockN + lr + 16 * i;
    if (t >= Tk) continue;
    Pack<int8_t, 8> codes;
#pragma unroll
    for (int e = 0; e < 8; ++e) codes.v[e] = int8_t(__float2int_rn(x[i][e] * inv));
    *reinterpret_cast<Pack<int8_t, 8>*>(k8 + (int64_t(bh) * Tk + t) * kHeadDim + c * 8) = codes;
  }
  if (threadIdx.x == 0) k_scale[int64_t(bh) * gridDim.x + tile] = amax > 0.f ? amax / 127.f : 0.f;
}

// The column of key `key` (0 .. 127 in its tile) in the permuted Vᵀ tile: within each 32 keys,
// key 16 half + 8 hi + 2 t + lo sits at 16 half + 4 t + 2 hi + lo (pack_p's order).
__device__ __forceinline__ int permuted_key(int key) {
  const int group = key & ~31, a = key & 31;
  const int half = a >> 4, hi = (a >> 3) & 1, t = (a >> 1) & 3, lo = a & 1;
  return group + 16 * half + 4 * t + 2 * hi + lo;
}

// V per channel into Vᵀ tiles: thread (row lane lr, pack c) quantizes rows lr + 16 i of the tile,
// the bytes go through shared memory as [d][permuted key], then out as 16-byte row pieces. Keys
// past Tk are zeros. Tile 0's block also writes the channel scales.
__global__ void __launch_bounds__(256)
    quantize_v_kernel(const bf16* v, int64_t sb, int64_t sh, int64_t st, int Hkv, int Tk, int64_t Tk_pad,
                      const float* partial, uint8_t* v8t, float* v_scale) {
  __shared__ __align__(16) uint8_t tile_t[kHeadDim][kBlockN + 16];  // padded rows
  const int tile = blockIdx.x, bh = blockIdx.y, b = bh / Hkv, h = bh % Hkv;
  const int lr = threadIdx.x / 16, c = threadIdx.x % 16;
  const float* part = partial + int64_t(bh) * kChunks * 2 * kHeadDim;
  float inv[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float amax = value_amax(part, c * 8 + e);
    inv[e] = amax > 0.f ? 448.f / amax : 0.f;
    if (tile == 0 && lr == 0) v_scale[int64_t(bh) * kHeadDim + c * 8 + e] = amax > 0.f ? amax / 448.f : 0.f;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int key = lr + 16 * i, t = tile * kBlockN + key;
    float x[8] = {};
    if (t < Tk) load_pack<bf16, 8>(x, v + b * sb + h * sh + int64_t(t) * st + c * 8);
    const int col = permuted_key(key);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      tile_t[c * 8 + e][col] = uint8_t(__nv_cvt_float_to_fp8(x[e] * inv[e], __NV_SATFINITE, __NV_E4M3));
  }
  __syncthreads();
  uint8_t* out = v8t + int64_t(bh) * kHeadDim * Tk_pad + int64_t(tile) * kBlockN;
  for (int i = threadIdx.x; i < kHeadDim * (kBlockN / 16); i += blockDim.x) {
    const int d = i / (kBlockN / 16), piece = i % (kBlockN / 16);
    *reinterpret_cast<uint4*>(out + int64_t(d) * Tk_pad + piece * 16) =
        *reinterpret_cast<const uint4*>(&tile_t[d][piece * 16]);
  }
}

bool readable(const Tensor& t) {
  if (t.dtype() != DType::BF16 || t.dim() != 4 || t.size(3) != kHeadDim || t.stride(3) != 1) return false;
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  for (int d = 0; d < 3; ++d)
    if (t.stride(d) < 0 || t.stride(d) % 8 != 0) return false;
  return true;
}

CUtensorMap byte_map(const Tensor& t, uint64_t inner, uint64_t rows, uint32_t box_inner) {
  // t is [B, heads, rows, inner] bytes, contiguous.
  return tensor_map_4d("attention (sage8)", t, CU_TENSOR_MAP_DATA_TYPE_UINT8,
                       {inner, rows, uint64_t(t.size(1)), uint64_t(t.size(0))},
                       {inner, inner * rows, inner * rows * uint64_t(t.size(1))}, {box_inner, kBlockN, 1, 1});
}

}  // namespace

bool sage8_attention_takes(const Tensor& q, const Tensor& k, const Tensor& v) {
  return readable(q) && readable(k) && readable(v) && q.size(2) > 0 && k.size(2) > 0 &&
         k.size(2) == v.size(2) && k.size(1) == v.size(1) && q.size(1) % k.size(1) == 0 &&
         q.size(0) * q.size(1) <= 65535 && q.size(0) * k.size(1) <= 65535 && q.size(2) < (int64_t(1) << 30) &&
         k.size(2) < (int64_t(1) << 30);
}

void sage8_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale) {
  LTX2_CHECK(sage8_attention_takes(q, k, v), "attention (sage8): cannot take q {} k {} v {}", q.str(),
             k.str(), v.str());
  use_device(q);
  const Device dev = q.device();
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), Hkv = k.size(1), Tk = k.size(2);
  const int n_tiles = int((Tk + kBlockN - 1) / kBlockN);
  const int64_t Tk_pad = int64_t(n_tiles) * kBlockN;

  const Tensor partial = Tensor::empty({B * Hkv, kChunks, 2, kHeadDim}, DType::F32, dev);
  const Tensor q8 = Tensor::empty({B, H, Tq, kHeadDim}, DType::U8, dev);
  const Tensor k8 = Tensor::empty({B, Hkv, Tk, kHeadDim}, DType::U8, dev);
  const Tensor v8t = Tensor::empty({B, Hkv, kHeadDim, Tk_pad}, DType::U8, dev);
  const Tensor q_scale = Tensor::empty({B * H * Tq}, DType::F32, dev);
  const Tensor k_scale = Tensor::empty({B * Hkv * n_tiles}, DType::F32, dev);
  const Tensor v_scale = Tensor::empty({B * Hkv * kHeadDim}, DType::F32, dev);
  const auto* qp = static_cast<const bf16*>(q.data_ptr());
  const auto* kp = static_cast<const bf16*>(k.data_ptr());
  const auto* vp = static_cast<const bf16*>(v.data_ptr());
  auto* part = static_cast<float*>(partial.data_ptr());

  kv_stats_kernel<<<dim3(kChunks, unsigned(B * Hkv)), 256>>>(kp, vp, k.stride(0), k.stride(1), k.stride(2),
                                                             v.stride(0), v.stride(1), v.stride(2), int(Hkv),
                                                             int(Tk), part);
  check_launch();
  const int64_t q_rows = B * H * Tq;
  quantize_q_kernel<<<unsigned((q_rows + 15) / 16), 256>>>(
      qp, q.stride(0), q.stride(1), q.stride(2), int(H), int(Tq), q_rows, scale * kLog2e,
      static_cast<int8_t*>(q8.data_ptr()), static_cast<float*>(q_scale.data_ptr()));
  check_launch();
  quantize_k_kernel<<<dim3(unsigned(n_tiles), unsigned(B * Hkv)), 256>>>(
      kp, k.stride(0), k.stride(1), k.stride(2), int(Hkv), int(Tk), part, static_cast<int8_t*>(k8.data_ptr()),
      static_cast<float*>(k_scale.data_ptr()));
  check_launch();
  quantize_v_kernel<<<dim3(unsigned(n_tiles), unsigned(B * Hkv)), 256>>>(
      vp, v.stride(0), v.stride(1), v.stride(2), int(Hkv), int(Tk), Tk_pad, part,
      static_cast<uint8_t*>(v8t.data_ptr()), static_cast<float*>(v_scale.data_ptr()));
  check_launch();

  const CUtensorMap q_map = byte_map(q8, kHeadDim, uint64_t(Tq), kHeadDim);
  const CUtensorMap k_map = byte_map(k8, kHeadDim, uint64_t(Tk), kHeadDim);
  const CUtensorMap v_map = byte_map(v8t, uint64_t(Tk_pad), kHeadDim, kBlockN);
  Sage8Params p{};
  p.o = static_cast<bf16*>(out.data_ptr());
  for (int d = 0; d < 3; ++d) p.o_strides[d] = out.stride(d);
  p.H = int(H);
  p.Hkv = int(Hkv);
  p.Tq = int(Tq);
  p.Tk = int(Tk);
  p.n_tiles = n_tiles;
  p.q_scale = static_cast<const float*>(q_scale.data_ptr());
  p.k_scale = static_cast<const float*>(k_scale.data_ptr());
  p.v_scale = static_cast<const float*>(v_scale.data_ptr());

  static std::atomic<uint64_t> configured_devices{0};
  const uint64_t bit = uint64_t(1) << (dev.index % 64);
  if (!(configured_devices.load() & bit)) {
    LTX2_CUDA_CHECK(cudaFuncSetAttribute(sage8_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         kSmemBytes));
    configured_devices |= bit;
  }
  const dim3 grid(unsigned((Tq + kBlockM - 1) / kBlockM), unsigned(B * H));
  sage8_attention_kernel<<<grid, kThreads, kSmemBytes>>>(q_map, k_map, v_map, p);
  check_launch();
}

}  // namespace ltx2::cuda
