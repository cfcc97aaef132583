#include "core/tensor.h"

#include <cstring>
#include <numeric>

#include "core/cuda/memory.h"
#include "core/error.h"
#include "core/op_profile.h"

namespace ltx2 {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return st;
}

// ---- Storage -------------------------------------------------------------------------------

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.is_cpu()) {
    // 64-byte alignment for vector loads; at least one byte so data() is never null.
    size_t rounded = ((bytes ? bytes : 1) + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, rounded);
    LTX2_CHECK(data_ != nullptr, "out of host memory allocating {} bytes", bytes);
  } else {
    data_ = cuda_alloc(bytes, device.index);
  }
}

Storage::Storage(void* data, size_t bytes, Device device, std::shared_ptr<const void> owner)
    : data_(data), bytes_(bytes), device_(device), owner_(std::move(owner)) {}

Storage::~Storage() {
  if (owner_) return;
  if (device_.is_cpu()) {
    std::free(data_);
  } else {
    cuda_free(data_, device_.index);
  }
}

// ---- construction --------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) LTX2_CHECK(d >= 0, "negative dimension in shape {}", shape_str(shape));
  Tensor t;
  t.storage_ = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype),
                                         device);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device.is_cpu()) {
    std::memset(t.data_ptr(), 0, t.nbytes());
  } else {
    cuda_memset_zero(t.data_ptr(), t.nbytes(), device.index);
  }
  return t;
}

Tensor Tensor::full(const Shape& shape, float value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, Device::cpu());
  t.fill_(value);
  return device.is_cpu() ? t : t.to(device);
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape) {
  LTX2_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
             "from_vector: {} values for shape {}", values.size(), shape_str(shape));
  Tensor t = empty(shape, DType::F32);
  std::memcpy(t.data_ptr(), values.data(), values.size() * 4);
  return t;
}

Tensor Tensor::from_vector_i64(const std::vector<int64_t>& values, const Shape& shape) {
  LTX2_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
             "from_vector_i64: {} values for shape {}", values.size(), shape_str(shape));
  Tensor t = empty(shape, DType::I64);
  std::memcpy(t.data_ptr(), values.data(), values.size() * 8);
  return t;
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype, Device device,
                    std::shared_ptr<const void> owner) {
  Tensor t;
  size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  t.storage_ = std::make_shared<Storage>(data, bytes, device, std::move(owner));
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::arange(int64_t n, DType dtype) {
  Tensor t = empty({n}, dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::I64) {
      t.data<int64_t>()[i] = i;
    } else {
      LTX2_CHECK(dtype == DType::F32, "arange supports f32 and i64, not {}", dtype_name(dtype));
      t.data<float>()[i] = static_cast<float>(i);
    }
  }
  return t;
}

// ---- accessors -----------------------------------------------------------------------------

int Tensor::wrap_dim(int d) const {
  int n = dim();
  int w = d < 0 ? d + n : d;
  LTX2_CHECK(w >= 0 && w < n, "dimension {} out of range for a {}-d tensor", d, n);
  return w;
}

int64_t Tensor::size(int d) const { return shape_[wrap_dim(d)]; }
int64_t Tensor::stride(int d) const { return strides_[wrap_dim(d)]; }

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  LTX2_CHECK(defined(), "use of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

namespace {
template <typename T>
constexpr bool matches(DType t) {
  if constexpr (std::is_same_v<T, float>) return t == DType::F32;
  if constexpr (std::is_same_v<T, int32_t>) return t == DType::I32;
  if constexpr (std::is_same_v<T, int64_t>) return t == DType::I64;
  if constexpr (std::is_same_v<T, uint16_t>) return t == DType::BF16 || t == DType::F16;
  if constexpr (std::is_same_v<T, uint8_t>) return t == DType::U8 || t == DType::Bool;
  if constexpr (std::is_same_v<T, bool>) return t == DType::Bool;
  return false;
}
}  // namespace

template <typename T>
T* Tensor::data() const {
  LTX2_CHECK(matches<T>(dtype_), "tensor {} accessed with the wrong element type", str());
  // A host loop over GPU memory would crash the process instead of naming the tensor.
  LTX2_CHECK(device().is_cpu(), "tensor {} on {} read as host memory", str(), device().str());
  return static_cast<T*>(data_ptr());
}
template float* Tensor::data<float>() const;
template int32_t* Tensor::data<int32_t>() const;
template int64_t* Tensor::data<int64_t>() const;
template uint16_t* Tensor::data<uint16_t>() const;
template uint8_t* Tensor::data<uint8_t>() const;
template bool* Tensor::data<bool>() const;

std::string Tensor::str() const {
  if (!defined()) return "undefined";
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " " + device().str();
}

// ---- views ---------------------------------------------------------------------------------

Tensor Tensor::view(const Shape& shape) const {
  Shape s = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      LTX2_CHECK(infer < 0, "view: more than one -1 in {}", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    LTX2_CHECK(known > 0 && numel() % known == 0, "view: cannot infer {} from {}", shape_str(shape),
               str());
    s[infer] = numel() / known;
  }
  LTX2_CHECK(shape_numel(s) == numel(), "view: {} has {} elements, {} asks for {}", str(), numel(),
             shape_str(s), shape_numel(s));
  LTX2_CHECK(is_contiguous(), "view of a non-contiguous tensor {}", str());
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = contiguous_strides(s);
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  return is_contiguous() ? view(shape) : contiguous().view(shape);
}

Tensor Tensor::slice(int d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d);
  int64_t n = shape_[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  end = std::min(end, n);
  LTX2_CHECK(step > 0 && start >= 0 && start <= end, "slice [{}:{}:{}] out of range for size {}",
             start, end, step, n);
  Tensor t = *this;
  t.offset_ += start * strides_[d];
  t.shape_[d] = (end - start + step - 1) / step;
  t.strides_[d] *= step;
  return t;
}

Tensor Tensor::select(int d, int64_t index) const {
  d = wrap_dim(d);
  if (index < 0) index += shape_[d];
  LTX2_CHECK(index >= 0 && index < shape_[d], "select index {} out of range for size {}", index,
             shape_[d]);
  Tensor t = *this;
  t.offset_ += index * strides_[d];
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

Tensor Tensor::permute(const std::vector<int>& order) const {
  LTX2_CHECK(static_cast<int>(order.size()) == dim(), "permute of {} with {} dims", str(),
             order.size());
  Tensor t = *this;
  std::vector<bool> seen(dim(), false);
  for (int i = 0; i < dim(); ++i) {
    int o = wrap_dim(order[i]);
    LTX2_CHECK(!seen[o], "permute: repeated dimension {}", o);
    seen[o] = true;
    t.shape_[i] = shape_[o];
    t.strides_[i] = strides_[o];
  }
  return t;
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> order(dim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[wrap_dim(a)], order[wrap_dim(b)]);
  return permute(order);
}

Tensor Tensor::unsqueeze(int d) const {
  int n = dim() + 1;
  int w = d < 0 ? d + n : d;
  LTX2_CHECK(w >= 0 && w < n, "unsqueeze dimension {} out of range", d);
  Tensor t = *this;
  int64_t st = w < dim() ? strides_[w] * shape_[w] : 1;
  t.shape_.insert(t.shape_.begin() + w, 1);
  t.strides_.insert(t.strides_.begin() + w, st);
  return t;
}

Tensor Tensor::squeeze(int d) const {
  d = wrap_dim(d);
  LTX2_CHECK(shape_[d] == 1, "squeeze of dimension {} with size {}", d, shape_[d]);
  Tensor t = *this;
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

Tensor Tensor::flatten(int start, int end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start);
  end = wrap_dim(end);
  Shape s(shape_.begin(), shape_.begin() + start);
  int64_t n = 1;
  for (int i = start; i <= end; ++i) n *= shape_[i];
  s.push_back(n);
  s.insert(s.end(), shape_.begin() + end + 1, shape_.end());
  return reshape(s);
}

Tensor Tensor::expand(const Shape& shape) const {
  LTX2_CHECK(shape.size() >= shape_.size(), "expand {} to {}", str(), shape_str(shape));
  Tensor t = *this;
  size_t lead = shape.size() - shape_.size();
  t.shape_ = shape;
  t.strides_.assign(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    int64_t have = shape_[i], want = shape[lead + i];
    LTX2_CHECK(have == want || have == 1, "expand {} to {}: dimension {} mismatch", str(),
               shape_str(shape), i);
    t.strides_[lead + i] = have == want ? strides_[i] : 0;
  }
  return t;
}

// ---- copies --------------------------------------------------------------------------------

namespace {

float load_as_float(const char* p, DType t) {
  switch (t) {
    case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::BF16: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_f32(v); }
    case DType::F16: { uint16_t v; std::memcpy(&v, p, 2); return f16_to_f32(v); }
    case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return static_cast<float>(v); }
    case DType::I64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<float>(v); }
    case DType::U8: return static_cast<float>(*reinterpret_cast<const uint8_t*>(p));
    case DType::Bool: return *p ? 1.f : 0.f;
    case DType::F8E4M3: return f8e4m3_to_f32(*reinterpret_cast<const uint8_t*>(p));
    case DType::F8E5M2: return f8e5m2_to_f32(*reinterpret_cast<const uint8_t*>(p));
  }
  return 0;
}

int64_t load_as_i64(const char* p, DType t) {
  switch (t) {
    case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::I64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case DType::U8: case DType::Bool: return *reinterpret_cast<const uint8_t*>(p);
    default: return static_cast<int64_t>(load_as_float(p, t));
  }
}

void store_from(char* p, DType t, const char* src, DType st) {
  switch (t) {
    case DType::F32: { float v = load_as_float(src, st); std::memcpy(p, &v, 4); return; }
    case DType::BF16: { uint16_t v = f32_to_bf16(load_as_float(src, st)); std::memcpy(p, &v, 2); return; }
    case DType::F16: { uint16_t v = f32_to_f16(load_as_float(src, st)); std::memcpy(p, &v, 2); return; }
    case DType::I32: { int32_t v = static_cast<int32_t>(load_as_i64(src, st)); std::memcpy(p, &v, 4); return; }
    case DType::I64: { int64_t v = load_as_i64(src, st); std::memcpy(p, &v, 8); return; }
    case DType::U8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(load_as_i64(src, st)); return;
    case DType::Bool: *p = load_as_float(src, st) != 0.f; return;
    case DType::F8E4M3: *reinterpret_cast<uint8_t*>(p) = f32_to_f8e4m3(load_as_float(src, st)); return;
    case DType::F8E5M2: *reinterpret_cast<uint8_t*>(p) = f32_to_f8e5m2(load_as_float(src, st)); return;
  }
}

// Walks every element of dst (shape) with the matching element of src; the innermost dimension
// is a tight loop.
void cpu_copy(const Tensor& dst, const Tensor& src) {
  const Shape& shape = dst.shape();
  int nd = dst.dim();
  DType dt = dst.dtype(), sdt = src.dtype();
  size_t dsz = dtype_size(dt), ssz = dtype_size(sdt);
  char* dbase = static_cast<char*>(dst.data_ptr());
  const char* sbase = static_cast<const char*>(src.data_ptr());
  if (dst.numel() == 0) return;
  if (dt == sdt && dst.is_contiguous() && src.is_contiguous()) {
    std::memmove(dbase, sbase, dst.nbytes());
    return;
  }
  if (nd == 0) {
    store_from(dbase, dt, sbase, sdt);
    return;
  }
  int64_t inner = shape[nd - 1];
  int64_t dis = dst.strides()[nd - 1], sis = src.strides()[nd - 1];
  int64_t outer = dst.numel() / inner;
  std::vector<int64_t> idx(nd, 0);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t doff = 0, soff = 0;
    for (int k = 0; k < nd - 1; ++k) {
      doff += idx[k] * dst.strides()[k];
      soff += idx[k] * src.strides()[k];
    }
    char* dp = dbase + doff * static_cast<int64_t>(dsz);
    const char* sp = sbase + soff * static_cast<int64_t>(ssz);
    if (dt == DType::F32 && sdt == DType::F32) {
      float* d = reinterpret_cast<float*>(dp);
      const float* s = reinterpret_cast<const float*>(sp);
      for (int64_t i = 0; i < inner; ++i) d[i * dis] = s[i * sis];
    } else if (dt == DType::F32 && sdt == DType::BF16) {
      float* d = reinterpret_cast<float*>(dp);
      const uint16_t* s = reinterpret_cast<const uint16_t*>(sp);
      for (int64_t i = 0; i < inner; ++i) d[i * dis] = bf16_to_f32(s[i * sis]);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        store_from(dp + i * dis * static_cast<int64_t>(dsz), dt,
                   sp + i * sis * static_cast<int64_t>(ssz), sdt);
    }
    for (int k = nd - 2; k >= 0; --k) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace

void Tensor::copy_(const Tensor& src) {
  LTX2_CHECK(defined() && src.defined(), "copy_ with an undefined tensor");
  LTX2_CHECK(shape_ == src.shape_, "copy_: shape {} into {}", shape_str(src.shape_), shape_str(shape_));
  if (device().is_cpu() && src.device().is_cpu()) {
    cpu_copy(*this, src);
    return;
  }
  // At least one side is on a GPU: same-dtype contiguous copies go straight through the copy
  // engine; anything else is first made contiguous and converted where that is cheapest.
  if (dtype_ == src.dtype_ && is_contiguous() && src.is_contiguous()) {
    OpScope scope("copy (contiguous)");
    cuda_memcpy(data_ptr(), device(), src.data_ptr(), src.device(), nbytes());
    return;
  }
  if (device().is_cuda() && src.device().is_cuda()) {
    OpScope scope("copy (strided or converting)");
    cuda_copy_strided(*this, src);
    return;
  }
  if (src.device().is_cuda()) {  // to host: bring the bytes over, then convert/stride on the CPU
    Tensor host = src.contiguous().to(Device::cpu());
    cpu_copy(*this, host);
    return;
  }
  Tensor staged = Tensor::empty(shape_, dtype_);  // from host: convert on the CPU, then upload
  cpu_copy(staged, src);
  copy_(staged);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor t = empty(shape_, dtype_, device());
  t.copy_(*this);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device());
  t.copy_(*this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor t = empty(shape_, dtype_, device);
  t.copy_(*this);
  return t;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor t = empty(shape_, dtype, device());
  t.copy_(*this);
  return t;
}

Tensor Tensor::to_scaled(DType dtype, float scale) const {
  LTX2_CHECK(dtype_is_floating(dtype_) && dtype_is_floating(dtype),
             "to_scaled from {} to {}: float dtypes only", dtype_name(dtype_), dtype_name(dtype));
  Tensor t = empty(shape_, dtype, device());
  if (device().is_cuda()) {
    OpScope scope("copy (strided or converting)");
    cuda_copy_scaled(t, *this, scale);
    return t;
  }
  const Tensor src = contiguous();
  const char* in = static_cast<const char*>(src.data_ptr());
  char* out = static_cast<char*>(t.data_ptr());
  const size_t isz = dtype_size(dtype_), osz = dtype_size(dtype);
  const int64_t n = numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    const float v = load_as_float(in + i * isz, dtype_) * scale;
    store_from(out + i * osz, dtype, reinterpret_cast<const char*>(&v), DType::F32);
  }
  return t;
}

void Tensor::fill_(float value) {
  LTX2_CHECK(device().is_cpu(), "fill_ on {} (use ops::fill on GPU tensors)", str());
  Tensor v = from_vector({value}, {});
  cpu_copy(*this, v.expand(shape_));
}

float Tensor::item(const std::vector<int64_t>& index) const {
  LTX2_CHECK(device().is_cpu(), "item() of a tensor on {}", device().str());
  LTX2_CHECK(static_cast<int>(index.size()) == dim() || (index.empty() && numel() == 1),
             "item(): index of {} dims for {}", index.size(), str());
  int64_t off = offset_;
  for (size_t i = 0; i < index.size(); ++i) {
    LTX2_CHECK(index[i] >= 0 && index[i] < shape_[i], "item(): index out of range for {}", str());
    off += index[i] * strides_[i];
  }
  return load_as_float(static_cast<const char*>(storage_->data()) + off * dtype_size(dtype_), dtype_);
}

int64_t Tensor::item_i64(const std::vector<int64_t>& index) const {
  LTX2_CHECK(device().is_cpu(), "item_i64() of a tensor on {}", device().str());
  int64_t off = offset_;
  for (size_t i = 0; i < index.size(); ++i) off += index[i] * strides_[i];
  return load_as_i64(static_cast<const char*>(storage_->data()) + off * dtype_size(dtype_), dtype_);
}

std::vector<float> Tensor::to_vector() const {
  Tensor c = to(Device::cpu()).to(DType::F32).contiguous();
  const float* p = c.data<float>();
  return std::vector<float>(p, p + c.numel());
}

std::vector<int64_t> Tensor::to_vector_i64() const {
  Tensor c = to(Device::cpu()).to(DType::I64).contiguous();
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

}  // namespace ltx2
