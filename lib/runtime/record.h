// Record: the serialized form of jobs and results that cross the shared-memory channel.
//
// Byte layout (little-endian, the start is 8-byte aligned):
//   [0, 4)    magic "LXRC"
//   [4, 8)    u32 header_len: bytes of the JSON header
//   [8, 16)   u64 payload_len: bytes of the tensor payload
//   [16, 16 + header_len)  the JSON header (an object), then zero padding to a multiple of 64
//   payload   the tensors' bytes, each starting at a multiple of 64 from the payload start
// The header holds the caller's fields plus "tensors": [{"name", "dtype" ("f32", ...), "shape",
// "offset", "bytes"}] describing the payload. decode_record checks every length, offset, shape and
// dtype against the buffer and throws ltx2::Error naming the fault, so a corrupt record is rejected
// and never read out of bounds.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ltx2::runtime {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct Record {
  nlohmann::json meta;  // the header minus "tensors"
  std::vector<NamedTensor> tensors;

  // The tensor called `name`; throws naming it when absent.
  const Tensor& tensor(const std::string& name) const;
};

// A record ready to be written: knows its size, then writes itself into any buffer (shared memory
// included) without an intermediate copy. Tensors must be on the CPU; a null meta is an empty object.
class EncodedRecord {
 public:
  EncodedRecord(const nlohmann::json& meta, std::vector<NamedTensor> tensors);
  size_t size() const { return prefix_bytes_ + payload_bytes_; }
  void write(uint8_t* dst) const;
  std::vector<uint8_t> bytes() const;

 private:
  std::string header_;
  std::vector<NamedTensor> tensors_;  // contiguous
  std::vector<size_t> offsets_;
  size_t prefix_bytes_ = 0, payload_bytes_ = 0;
};

// Parses a record. `what` names the buffer in errors ("job record", "result from rank 2").
// Without `owner` the tensors are copied out of `data`. With one they are zero-copy views into
// `data` that share `owner`: the caller keeps `data` valid while `owner` lives (result rings give
// a record's space back when its last view is dropped, result_reader.h).
Record decode_record(const uint8_t* data, size_t size, const std::string& what,
                     std::shared_ptr<const void> owner = nullptr);

}  // namespace ltx2::runtime
