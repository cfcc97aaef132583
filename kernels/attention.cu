// CUDA scaled dot-product attention: a flash-style kernel (FlashAttention-2 structure) on the
// tensor cores through mma.sync m16n8k16 (bf16 operands, float32 accumulation and online softmax).
//
// One block of 4 warps owns 128 query rows of one (batch, head); each warp owns 32 rows (two
// 16-row MMA tiles, so every K and V fragment read from shared memory feeds two MMAs) and keeps its
// 32x64 score tile and 32xD output accumulator in registers; Q fragments are re-read from shared
// memory per k-step. Keys and values stream through shared memory in 64-row tiles, two buffers
// deep (cp.async); rows are padded by 16 bytes so that ldmatrix reads are free of bank conflicts.
// The running max is taken on the raw scores; scale * log2 e folds into one FMA before exp2f.
// Masks broadcastable to [B, H, Tq, Tk] are read through their strides: bool/u8 (true = attend)
// or float (added to the scaled scores). A row with every key excluded yields zeros, as the CPU op
// does. f32 inputs are rounded to bf16 and the result converted back. Head dims 64 and 128,
// Dv == D. No host synchronisation.
#include <atomic>
#include <cmath>

#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kRowTiles = 2;  // 16-row tiles per warp: each K/V fragment read feeds this many MMAs
constexpr int kBlockM = 16 * kRowTiles * kWarps;
constexpr int kBlockN = 64;  // 32 measured 4% slower at D = 128 (H200, 2026-11-29)
constexpr float kLog2e = 1.4426950408889634f;

enum MaskKind { kNoMask = 0, kBoolMask = 1, kFloatMask = 2 };

struct AttentionParams {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* o;
  int64_t q_strides[3], k_strides[3], v_strides[3];  // batch, head, token (elements; dim stride 1)
  int H, Tq, Tk;
  int device;
  float scale_log2;  // the softmax scale times log2 e
  float inv_scale;   // 1 / scale: float masks are added to the unscaled scores
  const void* mask;
  int64_t mask_strides[4];  // batch, head, query, key
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

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

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c += a · b for one 16x8x16 tile (a: 4 registers of bf16 pairs, b: 2, c: 4 floats).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Copies `rows` (<= tile rows) rows of D bf16 starting at `src` (row stride in elements) into a
// padded shared tile; rows past `rows` are zero-filled.
template <int D, int TileRows>
__device__ __forceinline__ void load_tile(bf16* tile, const bf16* src, int64_t row_stride, int rows) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kStride = D + 8;
  for (int c = threadIdx.x; c < TileRows * kChunks; c += kWarps * 32) {
    int r = c / kChunks, col = (c % kChunks) * 8;
    bool valid = r < rows;
    const bf16* g = valid ? src + r * row_stride + col : src;
    cp_async_16(smem_addr(tile + r * kStride + col), g, valid);
  }
}

template <int D, int Mask>
__global__ void __launch_bounds__(kWarps * 32) flash_attention_kernel(const AttentionParams p) {
  constexpr int kStride = D + 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* q_tile = reinterpret_cast<bf16*>(smem_raw);
  bf16* k_tiles = q_tile + kBlockM * kStride;       // 2 buffers
  bf16* v_tiles = k_tiles + 2 * kBlockN * kStride;  // 2 buffers

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;
  const int bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  const int m0 = blockIdx.x * kBlockM;
  const int warp_row0 = warp * 16 * kRowTiles;  // first of this warp's rows in the block

  const bf16* q = p.q + b * p.q_strides[0] + h * p.q_strides[1] + m0 * p.q_strides[2];
  const bf16* k = p.k + b * p.k_strides[0] + h * p.k_strides[1];
  const bf16* v = p.v + b * p.v_strides[0] + h * p.v_strides[1];
  const int n_tiles = (p.Tk + kBlockN - 1) / kBlockN;

  load_tile<D, kBlockM>(q_tile, q, p.q_strides[2], min(kBlockM, p.Tq - m0));
  load_tile<D, kBlockN>(k_tiles, k, p.k_strides[2], min(kBlockN, p.Tk));
  load_tile<D, kBlockN>(v_tiles, v, p.v_strides[2], min(kBlockN, p.Tk));
  cp_async_commit();

  // Accumulator element e of row tile mt belongs to row warp_row0 + 16 mt + g + 8 (e >= 2).
  float o_acc[kRowTiles][D / 8][4];
  float row_max[kRowTiles][2], row_sum[kRowTiles][2];
  int mask_row[kRowTiles][2];  // query rows, clamped for mask reads past Tq
#pragma unroll
  for (int mt = 0; mt < kRowTiles; ++mt) {
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      o_acc[mt][i][0] = o_acc[mt][i][1] = o_acc[mt][i][2] = o_acc[mt][i][3] = 0.f;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_max[mt][r] = -INFINITY;
      row_sum[mt][r] = 0.f;
      mask_row[mt][r] = min(m0 + warp_row0 + mt * 16 + g + r * 8, p.Tq - 1);
    }
  }
  const unsigned char* mask_bytes = static_cast<const unsigned char*>(p.mask);
  const float* mask_floats = static_cast<const float*>(p.mask);
  const int64_t mask_base = b * p.mask_strides[0] + h * p.mask_strides[1];

  for (int t = 0; t < n_tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < n_tiles) {
      int n0 = (t + 1) * kBlockN, rows = min(kBlockN, p.Tk - n0);
      load_tile<D, kBlockN>(k_tiles + (buf ^ 1) * kBlockN * kStride, k + n0 * p.k_strides[2], p.k_strides[2],
                            rows);
      load_tile<D, kBlockN>(v_tiles + (buf ^ 1) * kBlockN * kStride, v + n0 * p.v_strides[2], p.v_strides[2],
                            rows);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    // S = Q Kᵀ for this warp's rows and the tile's 64 keys; each K fragment serves every row tile.
    const bf16* k_tile = k_tiles + buf * kBlockN * kStride;
    float s[kRowTiles][kBlockN / 8][4];
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt)
#pragma unroll
      for (int nb = 0; nb < kBlockN / 8; ++nb)
        s[mt][nb][0] = s[mt][nb][1] = s[mt][nb][2] = s[mt][nb][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qa[kRowTiles][4];
#pragma unroll
      for (int mt = 0; mt < kRowTiles; ++mt) {
        int row = warp_row0 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, col = kk * 16 + (lane >> 4) * 8;
        ldmatrix_x4(qa[mt], smem_addr(q_tile + row * kStride + col));
      }
#pragma unroll
      for (int np = 0; np < kBlockN / 16; ++np) {
        uint32_t kb[4];
        int key = np * 16 + (lane & 7) + (lane >> 4) * 8, col = kk * 16 + ((lane >> 3) & 1) * 8;
        ldmatrix_x4(kb, smem_addr(k_tile + key * kStride + col));
#pragma unroll
        for (int mt = 0; mt < kRowTiles; ++mt) {
          mma_bf16(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          mma_bf16(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

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
      for (int db = 0; db < D / 8; ++db) {
        o_acc[mt][db][0] *= rescale[0];
        o_acc[mt][db][1] *= rescale[0];
        o_acc[mt][db][2] *= rescale[1];
        o_acc[mt][db][3] *= rescale[1];
      }
    }

    // O += P V: the score accumulators of two adjacent 8-key blocks form one A fragment.
    const bf16* v_tile = v_tiles + buf * kBlockN * kStride;
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      uint32_t pa[kRowTiles][4];
#pragma unroll
      for (int mt = 0; mt < kRowTiles; ++mt) {
        pa[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t vb[4];
        int key = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, col = dp * 16 + (lane >> 4) * 8;
        ldmatrix_x4_trans(vb, smem_addr(v_tile + key * kStride + col));
#pragma unroll
        for (int mt = 0; mt < kRowTiles; ++mt) {
          mma_bf16(o_acc[mt][2 * dp], pa[mt], vb[0], vb[1]);
          mma_bf16(o_acc[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
    __syncthreads();  // the next iteration's loads overwrite this buffer
  }

  // Normalise and store [B, H, Tq, D].
#pragma unroll
  for (int mt = 0; mt < kRowTiles; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      float inv = sum > 0.f ? 1.f / sum : 0.f;
      int row = m0 + warp_row0 + mt * 16 + g + r * 8;
      if (row >= p.Tq) continue;
      bf16* orow = p.o + ((int64_t(b) * p.H + h) * p.Tq + row) * D;
#pragma unroll
      for (int db = 0; db < D / 8; ++db) {
        uint32_t packed = pack_bf16(o_acc[mt][db][2 * r] * inv, o_acc[mt][db][2 * r + 1] * inv);
        *reinterpret_cast<uint32_t*>(orow + db * 8 + 2 * tig) = packed;
      }
    }
  }
}

template <int D, int Mask>
void launch(const AttentionParams& p, int B) {
  constexpr int smem = (kBlockM + 4 * kBlockN) * (D + 8) * int(sizeof(bf16));
  auto kernel = flash_attention_kernel<D, Mask>;
  // Raising the shared-memory limit is per device; once each is enough.
  static std::atomic<uint64_t> configured_devices{0};
  uint64_t bit = uint64_t(1) << (p.device % 64);
  if (!(configured_devices.load() & bit)) {
    LTX2_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    configured_devices |= bit;
  }
  dim3 grid((p.Tq + kBlockM - 1) / kBlockM, B * p.H);
  kernel<<<grid, kWarps * 32, smem>>>(p);
  check_launch();
}

template <int D>
void launch_for_mask(const AttentionParams& p, int B, int mask_kind) {
  switch (mask_kind) {
    case kNoMask: return launch<D, kNoMask>(p, B);
    case kBoolMask: return launch<D, kBoolMask>(p, B);
    default: return launch<D, kFloatMask>(p, B);
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
  LTX2_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "attention: q, k, v must be 4-d, got {} {} {}",
             q.str(), k.str(), v.str());
  int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), Tk = k.size(2);
  LTX2_CHECK(k.size(0) == B && v.size(0) == B && k.size(1) == H && v.size(1) == H && k.size(3) == D &&
                 v.size(2) == Tk,
             "attention: q {} k {} v {} do not match", q.str(), k.str(), v.str());
  LTX2_CHECK(v.size(3) == D && (D == 64 || D == 128),
             "attention: the CUDA kernel takes head dims 64 and 128 with Dv == D, got q {} v {}", q.str(),
             v.str());
  LTX2_CHECK(q.device() == k.device() && q.device() == v.device(), "attention: q, k, v on different devices");
  for (const Tensor* t : {&q, &k, &v})
    LTX2_CHECK(t->dtype() == DType::BF16 || t->dtype() == DType::F32,
               "attention: the CUDA path takes bf16 or f32, got {}", t->str());
  use_device(q);
  Tensor qb = loadable(q), kb = loadable(k), vb = loadable(v);
  Tensor out = Tensor::empty({B, H, Tq, D}, DType::BF16, q.device());
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
  }
  p.device = q.device().index;
  p.H = static_cast<int>(H);
  p.Tq = static_cast<int>(Tq);
  p.Tk = static_cast<int>(Tk);
  float sc = scale > 0.f ? scale : 1.f / std::sqrt(static_cast<float>(D));
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
    LTX2_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), 0));
  } else if (D == 64) {
    launch_for_mask<64>(p, static_cast<int>(B), mask_kind);
  } else {
    launch_for_mask<128>(p, static_cast<int>(B), mask_kind);
  }
  return q.dtype() == DType::BF16 ? out : out.to(q.dtype());
}

}  // namespace ltx2::cuda
