// CUDA linear, linear_gelu_tanh and matmul through cuBLASLt: bf16 operands with float32 accumulation
// (f32 operands compute in plain float32; FP8 ones for gemm_fp8.cu), bias and the tanh GELU fused as
// the epilogue. Row-major
// products are issued as their column-major transposes (Cᵀ = Bᵀ·Aᵀ), so no operand is copied. One handle and
// one 32 MiB workspace per device; the algorithm heuristic is cached per problem (the query is host-only).
#include <map>
#include <mutex>
#include <tuple>

#include "core/cuda/memory.h"
#include "kernels/common.cuh"
#include "kernels/gemm.cuh"

namespace ltx2::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

struct DeviceContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

// Problem key: dtypes (A, B, D), transa, transb, m, n, k, batch, leading dims, batch strides, bias,
// GELU, pointer alignment, outer-vector scales.
using PlanKey = std::tuple<int, int, int, int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, bool, bool, uint32_t, bool>;

std::mutex g_mutex;
std::map<int, DeviceContext> g_contexts;
std::map<std::pair<int, PlanKey>, cublasLtMatmulAlgo_t> g_algos;

DeviceContext& context(int device) {
  DeviceContext& c = g_contexts[device];
  if (!c.handle) {
    LTX2_CUBLAS_CHECK(cublasLtCreate(&c.handle));
    c.workspace = cuda_alloc(kWorkspaceBytes, device);
  }
  return c;
}

// The largest power of two (up to 256) dividing every operand's address: the heuristic otherwise
// assumes 256-byte alignment, and views into a tensor can be less aligned.
uint32_t common_alignment(const void* a, const void* b, const void* d, const void* bias) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                   reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(bias) | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::F32: return CUDA_R_32F;
    case DType::F8E4M3: return CUDA_R_8F_E4M3;
    default: LTX2_FAIL("gemm: no cuBLASLt type for {}", dtype_name(t));
  }
}

// RAII holders for the descriptors of one call.
struct MatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~MatmulDesc() {
    if (d) cublasLtMatmulDescDestroy(d);
  }
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  ~Layout() {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
};
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  ~Preference() {
    if (p) cublasLtMatmulPreferenceDestroy(p);
  }
};

void make_layout(Layout& out, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                 int64_t batch_stride) {
  LTX2_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&out.l, type, rows, cols, ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    LTX2_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(out.l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    LTX2_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(out.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                       &batch_stride, sizeof(batch_stride)));
  }
}

}  // namespace

void gemm(const Tensor& out, const GemmParams& p) {
  int device = out.device().index;
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceContext& ctx = context(device);
  MatmulDesc desc;
  LTX2_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc.d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  LTX2_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  LTX2_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (p.bias || p.gelu) {
    cublasLtEpilogue_t epi =
        p.bias ? (p.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_GELU;
    LTX2_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  }
  if (p.bias) {
    LTX2_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)));
    // cuBLASLt's FP8 kernels take a bf16 bias for a bf16 and an f32 D alike (an f32 bias is "not
    // supported"; unsaid, it is read as bf16); the others take D's dtype.
    const cudaDataType_t bias_type = cuda_type(p.a_dtype == DType::F8E4M3 ? DType::BF16 : p.d_dtype);
    LTX2_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                     sizeof(bias_type)));
  }
  const bool fp8 = p.a_dtype == DType::F8E4M3;
  LTX2_CHECK(fp8 ? p.b_dtype == DType::F8E4M3 && p.trans_a && !p.trans_b && p.a_scale && p.b_scale
                 : p.a_dtype == p.b_dtype && p.a_dtype == p.d_dtype && !p.a_scale && !p.b_scale &&
                       !p.outer_vector_scales,
             "gemm: unsupported operands {} x {} -> {}", dtype_name(p.a_dtype), dtype_name(p.b_dtype),
             dtype_name(p.d_dtype));
  if (fp8) {
    LTX2_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &p.a_scale,
                                                     sizeof(p.a_scale)));
    LTX2_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &p.b_scale,
                                                     sizeof(p.b_scale)));
    if (p.outer_vector_scales) {
      const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      for (auto attr : {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_DESC_B_SCALE_MODE})
        LTX2_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, attr, &mode, sizeof(mode)));
    }
  }
  Layout la, lb, ld;
  make_layout(la, cuda_type(p.a_dtype), p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.lda, p.batch,
              p.stride_a);
  make_layout(lb, cuda_type(p.b_dtype), p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.ldb, p.batch,
              p.stride_b);
  make_layout(ld, cuda_type(p.d_dtype), p.m, p.n, p.ldd, p.batch, p.stride_d);

  uint32_t align = common_alignment(p.A, p.B, p.D, p.bias);
  PlanKey key{int(p.a_dtype),
              int(p.b_dtype),
              int(p.d_dtype),
              p.trans_a,
              p.trans_b,
              p.m,
              p.n,
              p.k,
              p.batch,
              p.lda,
              p.ldb,
              p.ldd,
              p.stride_a,
              p.stride_b,
              p.stride_d,
              p.bias != nullptr,
              p.gelu,
              align,
              p.outer_vector_scales};
  auto found = g_algos.find({device, key});
  if (found == g_algos.end()) {
    Preference pref;
    LTX2_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.p));
    size_t ws = kWorkspaceBytes;
    LTX2_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &ws, sizeof(ws)));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      LTX2_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, attr, &align, sizeof(align)));
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    LTX2_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(ctx.handle, desc.d, la.l, lb.l, ld.l, ld.l, pref.p, 1,
                                                     &result, &count));
    LTX2_CHECK(count > 0, "cuBLASLt has no algorithm for a {} x {} -> {} GEMM m={} n={} k={} batch={}",
               dtype_name(p.a_dtype), dtype_name(p.b_dtype), dtype_name(p.d_dtype), p.m, p.n, p.k, p.batch);
    found = g_algos.emplace(std::make_pair(device, key), result.algo).first;
  }
  float alpha = 1.f, beta = 0.f;
  LTX2_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, desc.d, &alpha, p.A, la.l, p.B, lb.l, &beta, p.D, ld.l, p.D,
                                   ld.l, &found->second, ctx.workspace, kWorkspaceBytes, 0));
}

namespace {

void check_operands(const Tensor& a, const Tensor& b, const char* op) {
  LTX2_CHECK(a.device() == b.device(), "{}: operands on {} and {}", op, a.device().str(), b.device().str());
  LTX2_CHECK(a.dtype() == b.dtype() && (a.dtype() == DType::BF16 || a.dtype() == DType::F32),
             "{}: the CUDA path takes two bf16 or two f32 operands, got {} and {}", op, a.str(), b.str());
}

Tensor linear_epilogue(const Tensor& x, const Tensor& w, const Tensor& bias, bool gelu) {
  check_operands(x, w, "linear");
  LTX2_CHECK(w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1),
             "linear: input {} does not match weight {}", x.str(), w.str());
  int64_t K = w.size(1), N = w.size(0), M = K ? x.numel() / K : 0;
  use_device(x);
  Tensor xc = x.contiguous(), wc = w.contiguous();
  Tensor bc;
  if (bias.defined()) {
    LTX2_CHECK(bias.numel() == N && bias.device() == x.device(), "linear: bias {} for {} outputs", bias.str(),
               N);
    bc = bias.to(x.dtype()).contiguous();  // the epilogue reads the bias in the output's dtype
  }
  Shape out_shape = x.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
  if (M == 0 || N == 0) return y;
  LTX2_CHECK(K > 0, "linear: empty reduction dimension in {}", w.str());
  gemm(y, linear_params(x.dtype(), x.dtype(), wc.data_ptr(), xc.data_ptr(), y.data_ptr(), M, N, K,
                        bc.defined() ? bc.data_ptr() : nullptr, gelu));
  return y;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  return linear_epilogue(x, w, bias, false);
}

Tensor linear_gelu_tanh(const Tensor& x, const Tensor& w, const Tensor& bias) {
  return linear_epilogue(x, w, bias, true);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands(a, b, "matmul");
  LTX2_CHECK(a.dim() >= 2 && b.dim() >= 2 && a.size(-1) == b.size(-2),
             "matmul: shapes {} and {} do not chain", a.str(), b.str());
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  int64_t batch = M * K != 0 ? a.numel() / (M * K) : 0;
  bool shared_b = b.dim() == 2;
  LTX2_CHECK(shared_b || b.numel() / (K * N) == batch, "matmul: batch of {} and {} differ", a.str(), b.str());
  use_device(a);
  Shape out_shape = a.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape, a.dtype(), a.device());
  if (y.numel() == 0) return y;
  LTX2_CHECK(K > 0, "matmul: empty reduction dimension in {}", a.str());
  Tensor ac = a.contiguous(), bc = b.contiguous();
  // A shared right operand folds the batch into the rows of a.
  int64_t rows = shared_b ? batch * M : M, count = shared_b ? 1 : batch;
  // yᵀ[N, rows] = bᵀ[N, K] · aᵀ[K, rows]; a row-major [K, N] is a column-major [N, K].
  GemmParams p = same_dtype(a.dtype());
  p.m = N, p.n = rows, p.k = K;
  p.A = bc.data_ptr(), p.lda = N, p.stride_a = K * N;
  p.B = ac.data_ptr(), p.ldb = K, p.stride_b = rows * K;
  p.D = y.data_ptr(), p.ldd = N, p.stride_d = rows * N;
  p.batch = count;
  gemm(y, p);
  return y;
}

}  // namespace ltx2::cuda
