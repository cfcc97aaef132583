// Safetensors files: strict header parsing, a memory-mapped reader, and an atomic writer that
// streams the data region from a callback (so a file larger than memory can be written).
//
// Format: 8-byte little-endian header length N, N bytes of JSON, then the data region. The JSON
// maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data region) and may hold "__metadata__": {string: string}. Every rule is checked before any
// tensor is touched: header size bound, JSON syntax and types, no key twice in one object, known
// dtype, shape entries that are non-negative integers, byte size == numel * dtype size, offsets
// inside the file, no overlaps.
// Messages are one line and name the file and the tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ltx2 {

// Largest header accepted (the real 22B checkpoint's header is a few MiB).
constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte offsets in the data region
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in file order (by begin offset)
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + N
};

// Parses and validates the header of a file of `file_size` bytes whose first bytes are `data`
// (`size` of them available; at least min(file_size, 8 + N) are needed). `path` only names the
// file in messages. Throws ltx2::Error on any violation.
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, uint64_t file_size,
                                           const std::string& path);

class SafetensorsFile {
 public:
  // Opens, maps and validates. Throws ltx2::Error naming the file on any problem.
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  // Metadata value for key, or "" when absent.
  std::string metadata_value(const std::string& key) const;
  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Throws naming the file when absent.
  const TensorInfo& info(const std::string& name) const;
  // Zero-copy CPU view of the mapped bytes (read-only by contract; keeps the mapping alive). A file
  // truncated after open() kills the process with SIGBUS when the view is read past its new end:
  // loads that copy anyway go through read().
  Tensor tensor(const std::string& name) const;
  // A tensor's stored bytes in a new CPU tensor, read with pread rather than through the mapping, so
  // that a file truncated or rewritten since open() is an Error naming it, not a SIGBUS. Refuses a
  // floating tensor holding a NaN or an infinity, naming it: each chunk is scanned just after it is
  // read, while it is in cache, so the check costs little next to the read.
  Tensor read(const std::string& name) const;
  // Reads a tensor's stored bytes into GPU memory `dst` (at least its byte size) on `device`
  // through pinned staging buffers (core/cuda/memory.h, cuda_upload_from_file): the fast path
  // for weights that go to a GPU in their stored dtype. A file truncated or rewritten since open()
  // is an Error, as for read(); the values are not checked.
  void upload(const TensorInfo& info, void* dst, Device device) const;

 private:
  SafetensorsFile() = default;
  // Throws naming the file and tensor when the file's size or modification time is no longer
  // open()'s: the bytes just read may be another file's.
  void check_unchanged(const std::string& name) const;
  std::string path_;
  void* map_ = nullptr;
  int fd_ = -1;
  uint64_t size_ = 0;
  int64_t mtime_ns_ = 0;
  SafetensorsHeader header_;
  std::map<std::string, size_t> index_;
  std::weak_ptr<SafetensorsFile> self_;
};

// What a file will hold for one tensor (its bytes come later).
struct TensorSpec {
  std::string name;
  DType dtype = DType::BF16;
  Shape shape;
  uint64_t nbytes() const { return static_cast<uint64_t>(shape_numel(shape)) * dtype_size(dtype); }
};

// Produces `bytes` bytes of tensor `index` of the list, starting at byte `offset` of its data.
using TensorBytesFn = std::function<void(size_t index, uint64_t offset, uint8_t* out, size_t bytes)>;

// Writes a file holding `tensors` in the given order and string metadata: the header first, then
// the data region in chunks of at most `chunk_bytes` (a multiple of 8), each filled by `fill` on the
// calling thread, piece by piece in file order, while a writer thread writes the previous chunk.
// The file appears atomically: written to "<path>.tmp.<pid>" and renamed; removed on any failure,
// including an exception thrown by `fill` (which is then rethrown).
void write_safetensors_streamed(const std::string& path, const std::vector<TensorSpec>& tensors,
                                const std::map<std::string, std::string>& metadata, const TensorBytesFn& fill,
                                size_t chunk_bytes = size_t{64} << 20);

// The size of the file write_safetensors_streamed writes for these tensors and metadata.
uint64_t safetensors_file_size(const std::vector<TensorSpec>& tensors,
                               const std::map<std::string, std::string>& metadata);

// Writes tensors (any device/strides; stored contiguous, in the given order) and string metadata,
// through write_safetensors_streamed.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ltx2
