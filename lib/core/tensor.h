// Tensor: a typed, strided view over shared storage on the CPU or one CUDA device.
//
// Layout: element (i0, i1, ...) lives at data + (offset + sum_k i_k * strides[k]) * dtype_size.
// Strides are in elements. Views (view, slice, select, permute, transpose, unsqueeze, ...) share
// the storage and never copy; contiguous(), clone(), to() copy. Storage is reference counted, so a
// view keeps its storage alive; storage may also wrap external memory (an mmap'ed checkpoint) with
// an owner handle that keeps that memory alive.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"

namespace ltx2 {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);
int64_t shape_numel(const Shape& s);

class Storage {
 public:
  // Allocates `bytes` on `device` (CUDA through the caching allocator).
  Storage(size_t bytes, Device device);
  // Wraps memory owned elsewhere; `owner` is kept alive as long as this storage.
  Storage(void* data, size_t bytes, Device device, std::shared_ptr<const void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::shared_ptr<const void> owner_;  // set for wrapped memory; null when we allocated
};

class Tensor {
 public:
  Tensor() = default;

  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, float value, DType dtype = DType::F32,
                     Device device = Device::cpu());
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape);
  static Tensor from_vector_i64(const std::vector<int64_t>& values, const Shape& shape);
  static Tensor scalar(float value) { return from_vector({value}, {}); }
  // Contiguous view over external memory.
  static Tensor wrap(void* data, const Shape& shape, DType dtype, Device device,
                     std::shared_ptr<const void> owner);
  // 0, 1, ..., n-1 as f32 or i64.
  static Tensor arange(int64_t n, DType dtype = DType::F32);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  // Size of dimension d; negative d counts from the end.
  int64_t size(int d) const;
  int64_t stride(int d) const;
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  int64_t offset() const { return offset_; }
  bool is_contiguous() const;
  bool shares_storage(const Tensor& o) const { return storage_ == o.storage_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  void* data_ptr() const;
  // Typed pointer to the first element; throws if T does not match the dtype or the tensor is not
  // in host memory.
  template <typename T>
  T* data() const;

  // Views (share storage).
  Tensor view(const Shape& shape) const;  // needs a contiguous tensor; one -1 allowed
  Tensor reshape(const Shape& shape) const;  // view when possible, else a contiguous copy
  Tensor slice(int d, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int d, int64_t start, int64_t length) const { return slice(d, start, start + length); }
  Tensor select(int d, int64_t index) const;
  Tensor permute(const std::vector<int>& order) const;
  Tensor transpose(int a, int b) const;
  Tensor unsqueeze(int d) const;
  Tensor squeeze(int d) const;
  Tensor flatten(int start = 0, int end = -1) const;
  Tensor expand(const Shape& shape) const;  // broadcast view with zero strides

  // Copies.
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  // float(x) * scale rounded to `dtype`, on this tensor's device (a float tensor): dequantizes an
  // 8-bit weight stored with a per-tensor scale.
  Tensor to_scaled(DType dtype, float scale) const;
  // Copies src into this tensor (same shape; dtype converts; any strides; CPU<->CUDA).
  void copy_(const Tensor& src);
  void fill_(float value);

  // Reads one element as float/int64 (CPU only; for tests and small scalars).
  float item(const std::vector<int64_t>& index = {}) const;
  int64_t item_i64(const std::vector<int64_t>& index = {}) const;
  std::vector<float> to_vector() const;
  std::vector<int64_t> to_vector_i64() const;

  // "f32[2, 3] cpu"
  std::string str() const;

 private:
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_, strides_;
  DType dtype_ = DType::F32;

  int wrap_dim(int d) const;
};

Shape contiguous_strides(const Shape& shape);

}  // namespace ltx2
