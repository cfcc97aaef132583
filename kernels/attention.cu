// CUDA scaled dot-product attention: a flash-style kernel (FlashAttention-2 structure, online
// softmax in float32) whose two products run on Hopper's warpgroup MMA (wgmma, sm_90a):
// S = Q·Kᵀ with both operands in shared memory, O += P·V with P from registers.
//
// One block is one warpgroup (4 warps) and owns the query rows of one (batch, head) as 64-row wgmma
// tiles, two of them (128 rows) at tile widths 64 and 128, one at 256 (TileShape says why);
// warp w holds rows 64 mt + 16 w .. + 15 of tile mt (the wgmma accumulator layout, which is also
// the A-fragment layout P is packed into). Q, K and V tiles are copied by cp.async into the
// canonical 128-byte-swizzled layout (64-column blocks, 1024-byte aligned): K-major for Q and K,
// N-major (the transposed operand) for V; K/V are double-buffered in 64-key tiles. Each product is
// issued, committed and waited for before the softmax (no overlap yet). The running max is taken
// on the raw scores; scale * log2 e folds into one FMA before exp2f. Masks broadcastable to
// [B, H, Tq, Tk] are read through their strides: bool/u8 (true = attend) or float (added to the
// scaled scores). A row with every key excluded yields zeros, as the CPU op does. f32 inputs are
// rounded to bf16 and the result converted back. The bf16 result is [B, H, Tq, D] as a view of
// [B, Tq, H, D] memory (the heads' merge is then free). Head dims: multiples of 8 from 64 to 256,
// Dv == D, run in tiles 64, 128 or 256 columns wide (the columns past D zero-filled). Grouped-query
// attention (k, v with Hkv heads) reads KV head h / (H / Hkv) in place. Nothing of size Tq x Tk
// is ever stored. Other head dims (ops::attention_kernel_takes) never reach this file: the op
// composes them from the other ops (lib/ops/attention.cpp). No host synchronisation.
// An unmasked call may run another engine instead: the FlashAttention-3-style kernel
// (attention_fa3.cu, head dim 128) or, in builds with cuDNN, cuDNN's fused flash attention
// (kernels/attention_pick.h says which engine runs when); in 8-bit precision
// (ops::attention_precision) the 8-bit kernel of attention_sage8.cu runs what it takes.
#include <atomic>
#include <cmath>
#include <vector>

#include "kernels/attention_fa3.h"
#include "kernels/attention_pick.h"
#include "kernels/attention_sage8.h"
#include "kernels/common.cuh"
#include "kernels/wgmma.cuh"
#ifdef LTX2_WITH_CUDNN
#include "kernels/cudnn/attention_cudnn.h"
#endif
#include "ops/attention.h"

namespace ltx2::cuda {

namespace {

constexpr int kWarps = 4;    // one warpgroup
constexpr int kBlockN = 64;  // keys per K/V tile
constexpr float kLog2e = 1.4426950408889634f;

// The kernel's shape per padded head dim DP, the width of the Q, K and V tiles in shared memory
// (64, 128 or 256 columns). At 64 and 128 a block owns two 64-row tiles, so every K/V tile read
// from shared memory feeds two products. At 256 it owns one: the float O accumulator of one 64-row
// tile is then 128 registers a thread already (two would be 256, the whole register file of a
// thread), and Q + 2 K + 2 V buffers take 161 KiB of shared memory (one block an SM).
template <int DP>
struct TileShape {
  static_assert(DP == 64 || DP == 128 || DP == 256, "tile widths 64, 128, 256");
  static constexpr int kRowTiles = DP == 256 ? 1 : 2;
  static constexpr int kBlockM = 64 * kRowTiles;  // query rows per block
  // Q tile, two K and two V buffers, and the slack that aligns them to 1024 bytes.
  static constexpr int kSmemBytes = (kBlockM + 4 * kBlockN) * DP * int(sizeof(bf16)) + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "more shared memory than an sm_90 block may have");
};

// The tile width the kernel runs head dim D at (one that ops::attention_kernel_takes): 64, 128 or
// 256; the columns past D are zero-filled.
int kernel_width(int64_t D) {
  return D <= 64 ? 64 : D <= 128 ? 128 : 256;
}

enum MaskKind { kNoMask = 0, kBoolMask = 1, kFloatMask = 2 };

struct AttentionParams {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* o;
  int64_t q_strides[3], k_strides[3], v_strides[3], o_strides[3];  // batch, head, token (dim stride 1)
  int H, Tq, Tk;
  int D;             // the head dim (of q, k, v and o); the tiles' columns D .. DP - 1 are zeros
  int kv_group;      // query heads per KV head: query head h reads k, v head h / kv_group
  float scale_log2;  // the softmax scale times log2 e
  float inv_scale;   // 1 / scale: float masks are added to the unscaled scores
  const void* mask;
  int64_t mask_strides[4];  // batch, head, query, key
};

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Q, K and V tiles for wgmma: the canonical K-major layout with the 128-byte swizzle (V's rows are
// keys, so the same bytes are the N-major layout of the P·V operand). A tile of TileRows x DP is
// stored as DP/64 column blocks of TileRows x 64 bf16 (128-byte rows); the 16-byte chunk c of row r
// sits at chunk c ^ (r % 8) of its row. Column blocks start on 1024-byte boundaries. Rows from
// `rows` on and columns from `cols` on (the head dim, a multiple of 8) are zero-filled (cp.async
// with source size 0 reads nothing): zero columns add nothing to Q·Kᵀ and make O columns that are
// never stored; zero key rows are masked out of the softmax, and zero V rows keep P·V finite.
// Each thread copies one chunk column (chunk = thread % chunks per row) of every kRowStep-th row:
// the same (row, chunk) pairs as a flat loop over the tile, with the column test hoisted (the flat
// loop's per-copy test made ptxas spill 176 bytes instead of 84 in the D = 128 float-mask kernel).
template <int DP, int TileRows>
__device__ __forceinline__ void load_tile_sw128(bf16* tile, const bf16* src, int64_t row_stride, int rows,
                                                int cols) {
  constexpr int kChunks = DP / 8, kRowStep = kWarps * 32 / kChunks;
  static_assert(kWarps * 32 % kChunks == 0, "each thread copies one chunk column");
  const int chunk = threadIdx.x % kChunks, block = chunk / 8;
  const bool real_column = chunk * 8 < cols;
  for (int r = threadIdx.x / kChunks; r < TileRows; r += kRowStep) {
    int in_row = (chunk % 8) ^ (r & 7);
    bool valid = r < rows && real_column;
    const bf16* g = valid ? src + r * row_stride + chunk * 8 : src;
    cp_async_16(smem_addr(tile + block * TileRows * 64 + r * 64 + in_row * 8), g, valid);
  }
}

// O[64 x DP] += P[64 x 16] · V[16 x DP] for one k-step of 16 keys: V's two 8-row groups start at
// v_addr, its 64-column blocks `block_bytes` apart. One instruction at DP 64 and 128. At 256 two
// of width 128 with the same A registers: the first on V's column blocks 0-1 into O's 8-column
// blocks 0-15, the second on column blocks 2-3 (2 * block_bytes on; a multiple of 1024, so the
// swizzle phase is unchanged) into O's blocks 16-31, which hold columns 128 + 8 j + 2 tig + (e & 1)
// in the same layout. (A single n256 instruction would be the same work in one asm statement of
// 128 accumulators; the n128 one is what the D = 128 kernel already runs.)
template <int DP>
__device__ __forceinline__ void wgmma_pv(float (&d)[DP / 8][4], const uint32_t (&a)[4], uint32_t v_addr,
                                         uint32_t block_bytes) {
  if constexpr (DP == 64) {
    wgmma_m64n64k16_rs(d, a, sw128_desc_mn(v_addr, block_bytes));
  } else if constexpr (DP == 128) {
    wgmma_m64n128k16_rs(d, a, sw128_desc_mn(v_addr, block_bytes));
  } else {
    static_assert(DP == 256, "tile widths 64, 128, 256");
    auto& lo = *reinterpret_cast<float(*)[16][4]>(&d[0]);
    auto& hi = *reinterpret_cast<float(*)[16][4]>(&d[16]);
    wgmma_m64n128k16_rs(lo, a, sw128_desc_mn(v_addr, block_bytes));
    wgmma_m64n128k16_rs(hi, a, sw128_desc_mn(v_addr + 2 * block_bytes, block_bytes));
  }
}

// DP: the tile width (TileShape); the head dim p.D is at most DP.
template <int DP, int Mask>
__global__ void __launch_bounds__(kWarps * 32) flash_attention_kernel(const AttentionParams p) {
  constexpr int kRowTiles = TileShape<DP>::kRowTiles, kBlockM = TileShape<DP>::kBlockM;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Swizzled Q and K tiles need 1024-byte alignment; the launch adds the slack. Every buffer is a
  // multiple of 64 rows x 128 bytes, so each one starts 1024-byte aligned.
  bf16* q_tile = reinterpret_cast<bf16*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  bf16* k_tiles = q_tile + kBlockM * DP;       // 2 swizzled buffers
  bf16* v_tiles = k_tiles + 2 * kBlockN * DP;  // 2 swizzled buffers

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;
  const int bh = blockIdx.y, b = bh / p.H, h = bh % p.H, h_kv = h / p.kv_group;
  const int m0 = blockIdx.x * kBlockM;

  const bf16* q = p.q + b * p.q_strides[0] + h * p.q_strides[1] + m0 * p.q_strides[2];
  const bf16* k = p.k + b * p.k_strides[0] + h_kv * p.k_strides[1];
  const bf16* v = p.v + b * p.v_strides[0] + h_kv * p.v_strides[1];
  const int n_tiles = (p.Tk + kBlockN - 1) / kBlockN;

  load_tile_sw128<DP, kBlockM>(q_tile, q, p.q_strides[2], min(kBlockM, p.Tq - m0), p.D);
  load_tile_sw128<DP, kBlockN>(k_tiles, k, p.k_strides[2], min(kBlockN, p.Tk), p.D);
  load_tile_sw128<DP, kBlockN>(v_tiles, v, p.v_strides[2], min(kBlockN, p.Tk), p.D);
  cp_async_commit();

  // Accumulator element e of row tile mt belongs to row 64 mt + 16 warp + g + 8 (e >= 2): the
  // wgmma layout, which mma.sync's fragments of P then follow.
  float o_acc[kRowTiles][DP / 8][4];
  float row_max[kRowTiles][2], row_sum[kRowTiles][2];
  int mask_row[kRowTiles][2];  // query rows, clamped for mask reads past Tq
#pragma unroll
  for (int mt = 0; mt < kRowTiles; ++mt) {
#pragma unroll
    for (int i = 0; i < DP / 8; ++i)
      o_acc[mt][i][0] = o_acc[mt][i][1] = o_acc[mt][i][2] = o_acc[mt][i][3] = 0.f;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_max[mt][r] = -INFINITY;
      row_sum[mt][r] = 0.f;
      mask_row[mt][r] = min(m0 + mt * 64 + warp * 16 + g + r * 8, p.Tq - 1);
    }
  }
  const unsigned char* mask_bytes = static_cast<const unsigned char*>(p.mask);
  const float* mask_floats = static_cast<const float*>(p.mask);
  const int64_t mask_base = b * p.mask_strides[0] + h * p.mask_strides[1];

  for (int t = 0; t < n_tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < n_tiles) {
      int n0 = (t + 1) * kBlockN, rows = min(kBlockN, p.Tk - n0);
      load_tile_sw128<DP, kBlockN>(k_tiles + (buf ^ 1) * kBlockN * DP, k + n0 * p.k_strides[2],
                                   p.k_strides[2], rows, p.D);
      load_tile_sw128<DP, kBlockN>(v_tiles + (buf ^ 1) * kBlockN * DP, v + n0 * p.v_strides[2],
                                   p.v_strides[2], rows, p.D);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    fence_proxy_async();  // the tensor cores read what cp.async wrote
    __syncthreads();

    // S = Q Kᵀ on wgmma: per row tile, 64 rows x 64 keys in DP / 16 k-steps of 32 bytes inside
    // the swizzle atom of the step's 64-column block (Q's blocks are kBlockM rows, K's kBlockN).
    const uint32_t k_base = smem_addr(k_tiles + buf * kBlockN * DP), q_base = smem_addr(q_tile);
    float s[kRowTiles][kBlockN / 8][4];
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt)
#pragma unroll
      for (int nb = 0; nb < kBlockN / 8; ++nb)
        s[mt][nb][0] = s[mt][nb][1] = s[mt][nb][2] = s[mt][nb][3] = 0.f;
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt) fence_regs(s[mt]);
    wgmma_fence();
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt) {
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
        uint32_t q_addr = q_base + ((kk / 4) * kBlockM * 64 + mt * 64 * 64) * 2 + (kk % 4) * 32;
        uint32_t k_addr = k_base + (kk / 4) * kBlockN * 64 * 2 + (kk % 4) * 32;
        wgmma_m64n64k16(s[mt], sw128_desc(q_addr), sw128_desc(k_addr));
      }
    }
    wgmma_commit();
    wgmma_wait_all();
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt) fence_regs(s[mt]);

    // Scale, mask, and the online softmax update of each of the thread's rows.
    const int n0 = t * kBlockN;
    const bool partial_tile = n0 + kBlockN > p.Tk;  // only the last tile holds keys past Tk
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt) {
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nb = 0; nb < kBlockN / 8; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int key = n0 + nb * 8 + 2 * tig + (e & 1);
          float x = s[mt][nb][e];
          if (partial_tile && key >= p.Tk) {
            x = -INFINITY;
          } else if (Mask != kNoMask) {
            int64_t off = mask_base + mask_row[mt][e >> 1] * p.mask_strides[2] + key * p.mask_strides[3];
            if (Mask == kBoolMask) {
              if (!mask_bytes[off]) x = -INFINITY;
            } else {
              x += mask_floats[off] * p.inv_scale;
            }
          }
          s[mt][nb][e] = x;
          tile_max[e >> 1] = fmaxf(tile_max[e >> 1], x);
        }
      }
      float rescale[2], base[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        float new_max = fmaxf(row_max[mt][r], tile_max[r]);
        // In log2 units; a row with no key yet keeps zero weights instead of NaN.
        base[r] = new_max == -INFINITY ? 0.f : new_max * p.scale_log2;
        rescale[r] = exp2f(row_max[mt][r] * p.scale_log2 - base[r]);
        row_max[mt][r] = new_max;
        row_sum[mt][r] *= rescale[r];
      }
#pragma unroll
      for (int nb = 0; nb < kBlockN / 8; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float pe = exp2f(fmaf(s[mt][nb][e], p.scale_log2, -base[e >> 1]));
          s[mt][nb][e] = pe;
          row_sum[mt][e >> 1] += pe;
        }
      }
#pragma unroll
      for (int db = 0; db < DP / 8; ++db) {
        o_acc[mt][db][0] *= rescale[0];
        o_acc[mt][db][1] *= rescale[0];
        o_acc[mt][db][2] *= rescale[1];
        o_acc[mt][db][3] *= rescale[1];
      }
    }

    // O += P V on wgmma: the score accumulators of two adjacent 8-key blocks form one A fragment;
    // a k-step of 16 keys is two 8-row groups (2048 bytes) down the V tile.
    uint32_t pa[kRowTiles][kBlockN / 16][4];
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt)
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        pa[mt][kk][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][kk][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][kk][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][kk][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    const uint32_t v_base = smem_addr(v_tiles + buf * kBlockN * DP);
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt) {
      fence_regs(pa[mt]);
      fence_regs(o_acc[mt]);
    }
    wgmma_fence();
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt)
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk)
        wgmma_pv<DP>(o_acc[mt], pa[mt][kk], v_base + kk * 2048, kBlockN * 128);
    wgmma_commit();
    wgmma_wait_all();
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt) {
      fence_regs(pa[mt]);
      fence_regs(o_acc[mt]);
    }
    __syncthreads();  // the next iteration's loads overwrite this buffer
  }

  // Normalise and store through the output's strides: columns below D only (D is a multiple of 8,
  // so an 8-column block is wholly in or out).
#pragma unroll
  for (int mt = 0; mt < kRowTiles; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      float inv = sum > 0.f ? 1.f / sum : 0.f;
      int row = m0 + mt * 64 + warp * 16 + g + r * 8;
      if (row >= p.Tq) continue;
      bf16* orow = p.o + b * p.o_strides[0] + h * p.o_strides[1] + row * p.o_strides[2];
#pragma unroll
      for (int db = 0; db < DP / 8; ++db) {
        if (db * 8 < p.D) {
          uint32_t packed = pack_bf16(o_acc[mt][db][2 * r] * inv, o_acc[mt][db][2 * r + 1] * inv);
          *reinterpret_cast<uint32_t*>(orow + db * 8 + 2 * tig) = packed;
        }
      }
    }
  }
}

template <int DP, int Mask>
void launch(const AttentionParams& p, int B, int device) {
  constexpr int smem = TileShape<DP>::kSmemBytes, kBlockM = TileShape<DP>::kBlockM;
  auto kernel = flash_attention_kernel<DP, Mask>;
  // Raising the shared-memory limit is per device; once each is enough.
  static std::atomic<uint64_t> configured_devices{0};
  uint64_t bit = uint64_t(1) << (device % 64);
  if (!(configured_devices.load() & bit)) {
    LTX2_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    configured_devices |= bit;
  }
  dim3 grid((p.Tq + kBlockM - 1) / kBlockM, B * p.H);
  kernel<<<grid, kWarps * 32, smem>>>(p);
  check_launch();
}

template <int DP>
void launch_for_mask(const AttentionParams& p, int B, int device, int mask_kind) {
  switch (mask_kind) {
    case kNoMask: return launch<DP, kNoMask>(p, B, device);
    case kBoolMask: return launch<DP, kBoolMask>(p, B, device);
    default: return launch<DP, kFloatMask>(p, B, device);
  }
}

void launch_for_width(const AttentionParams& p, int B, int device, int width, int mask_kind) {
  switch (width) {
    case 64: return launch_for_mask<64>(p, B, device, mask_kind);
    case 128: return launch_for_mask<128>(p, B, device, mask_kind);
    default: return launch_for_mask<256>(p, B, device, mask_kind);
  }
}

// The tensor itself when its rows can be read with 16-byte copies, else a contiguous bf16 copy.
Tensor loadable(const Tensor& t) {
  Tensor x = t.dtype() == DType::BF16 ? t : t.to(DType::BF16);
  bool ok = x.stride(3) == 1 && reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0;
  for (int d = 0; d < 3; ++d) ok = ok && x.stride(d) % 8 == 0;
  return ok ? x : x.contiguous();
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, float scale) {
  // The op checked the shapes (ops::attention_kv_group) and the head dims.
  const int64_t kv_group = q.size(1) / k.size(1);
  int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), Tk = k.size(2);
  LTX2_CHECK(q.device() == k.device() && q.device() == v.device(),
             "attention: q {} k {} v {} on different devices", q.str(), k.str(), v.str());
  const int width = kernel_width(D);
  for (const Tensor* t : {&q, &k, &v})
    LTX2_CHECK(t->dtype() == DType::BF16 || t->dtype() == DType::F32,
               "attention: the CUDA path takes bf16 or f32, got {}", t->str());
  use_device(q);
  Tensor qb = loadable(q), kb = loadable(k), vb = loadable(v);
  // The output is [B, H, Tq, D] over token-major memory ([B, Tq, H, D]): the layout the models
  // merge the heads into next, so that merge is a view instead of a copy of the whole activation.
  const Tensor token_major = Tensor::empty({B, Tq, H, D}, DType::BF16, q.device());
  const Tensor out = token_major.transpose(1, 2);
  if (out.numel() == 0) return q.dtype() == DType::BF16 ? out : out.to(q.dtype());

  AttentionParams p{};
  p.q = static_cast<const bf16*>(qb.data_ptr());
  p.k = static_cast<const bf16*>(kb.data_ptr());
  p.v = static_cast<const bf16*>(vb.data_ptr());
  p.o = static_cast<bf16*>(out.data_ptr());
  for (int d = 0; d < 3; ++d) {
    p.q_strides[d] = qb.stride(d);
    p.k_strides[d] = kb.stride(d);
    p.v_strides[d] = vb.stride(d);
    p.o_strides[d] = out.stride(d);
  }
  p.H = static_cast<int>(H);
  p.Tq = static_cast<int>(Tq);
  p.Tk = static_cast<int>(Tk);
  p.D = static_cast<int>(D);
  p.kv_group = static_cast<int>(kv_group);
  const float sc = scale > 0.f ? scale : 1.f / std::sqrt(static_cast<float>(D));
  p.scale_log2 = sc * kLog2e;
  p.inv_scale = 1.f / sc;

  int mask_kind = kNoMask;
  Tensor m;
  if (mask.defined()) {
    LTX2_CHECK(mask.device() == q.device(), "attention: mask {} is not on {}", mask.str(), q.device().str());
    bool is_bool = mask.dtype() == DType::Bool || mask.dtype() == DType::U8;
    LTX2_CHECK(is_bool || mask.dtype() == DType::F32 || mask.dtype() == DType::BF16,
               "attention: mask must be bool, u8, f32 or bf16, got {}", mask.str());
    m = (is_bool || mask.dtype() == DType::F32 ? mask : mask.to(DType::F32)).expand({B, H, Tq, Tk});
    mask_kind = is_bool ? kBoolMask : kFloatMask;
    p.mask = m.data_ptr();
    for (int d = 0; d < 4; ++d) p.mask_strides[d] = m.stride(d);
  }
  if (Tk == 0) {  // no key at all: every row is excluded
    LTX2_CUDA_CHECK(cudaMemsetAsync(token_major.data_ptr(), 0, token_major.nbytes(), 0));
  } else {
    if (mask_kind == kNoMask && ops::attention_precision() == ops::AttentionPrecision::EightBit &&
        sage8_attention_takes(qb, kb, vb)) {
      sage8_attention(qb, kb, vb, out, sc);
      return q.dtype() == DType::BF16 ? out : out.to(q.dtype());
    }
    std::vector<AttentionCandidate> engines{{ops::AttentionEngine::Wgmma, [&] {
                                               launch_for_width(p, static_cast<int>(B), q.device().index,
                                                                width, mask_kind);
                                               return true;
                                             }}};
    if (mask_kind == kNoMask && fa3_attention_takes(qb, kb, vb))
      engines.push_back({ops::AttentionEngine::Fa3, [&] {
                           fa3_attention(qb, kb, vb, out, sc);
                           return true;
                         }});
#ifdef LTX2_WITH_CUDNN
    // cuDNN's graph (kernels/cudnn/attention_cudnn.cpp) is unmasked multi-head attention at 64/128.
    if (mask_kind == kNoMask && kv_group == 1 && (D == 64 || D == 128))
      engines.push_back({ops::AttentionEngine::Cudnn, [&] { return cudnn_attention(qb, kb, vb, out, sc); }});
#endif
    run_attention_engine(qb, kb, vb, engines);
  }
  return q.dtype() == DType::BF16 ? out : out.to(q.dtype());
}

}  // namespace ltx2::cuda
