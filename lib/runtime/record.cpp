// Record encoding and validated decoding (layout in record.h).
#include "runtime/record.h"

#include <cstring>
#include <limits>

#include "core/error.h"

namespace ltx2::runtime {
namespace {

constexpr uint32_t kRecordMagic = 0x4352584cu;  // "LXRC"
constexpr size_t kFixed = 16;
constexpr size_t kAlign = 64;

size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

bool dtype_from_name(const std::string& name, DType* out) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64, DType::U8, DType::Bool}) {
    if (name == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

}  // namespace

const Tensor& Record::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return t.tensor;
  LTX2_FAIL("record has no tensor '{}'", name);
}

EncodedRecord::EncodedRecord(const nlohmann::json& meta, std::vector<NamedTensor> tensors) {
  LTX2_CHECK(meta.is_object() || meta.is_null(), "record header must be a JSON object");
  LTX2_CHECK(!meta.contains("tensors"), "record header key 'tensors' is reserved");
  nlohmann::json header = meta.is_null() ? nlohmann::json::object() : meta;
  header["tensors"] = nlohmann::json::array();
  for (auto& t : tensors) {
    LTX2_CHECK(t.tensor.defined() && t.tensor.device().is_cpu(),
               "record tensor '{}' must be a defined CPU tensor", t.name);
    t.tensor = t.tensor.contiguous();
    offsets_.push_back(payload_bytes_);
    header["tensors"].push_back({{"name", t.name},
                                 {"dtype", dtype_name(t.tensor.dtype())},
                                 {"shape", t.tensor.shape()},
                                 {"offset", payload_bytes_},
                                 {"bytes", t.tensor.nbytes()}});
    payload_bytes_ += align_up(t.tensor.nbytes());
  }
  tensors_ = std::move(tensors);
  header_ = header.dump();
  LTX2_CHECK(header_.size() < std::numeric_limits<uint32_t>::max(), "record header too large");
  prefix_bytes_ = align_up(kFixed + header_.size());
}

void EncodedRecord::write(uint8_t* dst) const {
  const uint32_t header_len = static_cast<uint32_t>(header_.size());
  const uint64_t payload_len = payload_bytes_;
  std::memcpy(dst, &kRecordMagic, 4);
  std::memcpy(dst + 4, &header_len, 4);
  std::memcpy(dst + 8, &payload_len, 8);
  std::memcpy(dst + kFixed, header_.data(), header_.size());
  std::memset(dst + kFixed + header_.size(), 0, prefix_bytes_ - kFixed - header_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const size_t nb = tensors_[i].tensor.nbytes();
    if (nb) std::memcpy(dst + prefix_bytes_ + offsets_[i], tensors_[i].tensor.data_ptr(), nb);
  }
}

std::vector<uint8_t> EncodedRecord::bytes() const {
  std::vector<uint8_t> out(size());
  write(out.data());
  return out;
}

Record decode_record(const uint8_t* data, size_t size, const std::string& what,
                     std::shared_ptr<const void> owner) {
  LTX2_CHECK(size >= kFixed, "corrupt {}: {} bytes is shorter than the 16-byte prefix", what, size);
  uint32_t magic, header_len;
  uint64_t payload_len;
  std::memcpy(&magic, data, 4);
  std::memcpy(&header_len, data + 4, 4);
  std::memcpy(&payload_len, data + 8, 8);
  LTX2_CHECK(magic == kRecordMagic, "corrupt {}: bad magic 0x{:08x}", what, magic);
  LTX2_CHECK(header_len <= size - kFixed, "corrupt {}: header of {} bytes overruns the {}-byte record", what,
             header_len, size);
  const size_t prefix = align_up(kFixed + header_len);
  LTX2_CHECK(prefix <= size && payload_len <= size - prefix,
             "corrupt {}: payload of {} bytes overruns the {}-byte record", what, payload_len, size);
  nlohmann::json header = nlohmann::json::parse(data + kFixed, data + kFixed + header_len, nullptr, false);
  LTX2_CHECK(!header.is_discarded() && header.is_object(), "corrupt {}: header is not a JSON object", what);
  LTX2_CHECK(header.contains("tensors") && header["tensors"].is_array(),
             "corrupt {}: header has no 'tensors' list", what);
  Record rec;
  for (const auto& t : header["tensors"]) {
    LTX2_CHECK(t.is_object() && t.contains("name") && t["name"].is_string() && t.contains("dtype") &&
                   t["dtype"].is_string() && t.contains("shape") && t["shape"].is_array() &&
                   t.contains("offset") && t["offset"].is_number_unsigned() && t.contains("bytes") &&
                   t["bytes"].is_number_unsigned(),
               "corrupt {}: malformed tensor entry {}", what, t.dump());
    const std::string name = t["name"];
    DType dtype;
    LTX2_CHECK(dtype_from_name(t["dtype"].get<std::string>(), &dtype),
               "corrupt {}: tensor '{}' has unknown dtype {}", what, name, t["dtype"].dump());
    Shape shape;
    uint64_t numel = 1;
    for (const auto& d : t["shape"]) {
      LTX2_CHECK(d.is_number_unsigned() && d.get<uint64_t>() < (1ull << 40),
                 "corrupt {}: tensor '{}' has bad shape {}", what, name, t["shape"].dump());
      numel *= d.get<uint64_t>();
      LTX2_CHECK(numel < (1ull << 40), "corrupt {}: tensor '{}' is too large", what, name);
      shape.push_back(d.get<int64_t>());
    }
    const uint64_t offset = t["offset"], bytes = t["bytes"];
    LTX2_CHECK(bytes == numel * dtype_size(dtype), "corrupt {}: tensor '{}' has {} bytes for shape {} {}",
               what, name, bytes, shape_str(shape), dtype_name(dtype));
    LTX2_CHECK(offset % kAlign == 0 && offset <= payload_len && bytes <= payload_len - offset,
               "corrupt {}: tensor '{}' [{}, +{}) lies outside the {}-byte payload", what, name, offset,
               bytes, payload_len);
    const uint8_t* src = data + prefix + offset;
    if (owner) {
      rec.tensors.push_back(
          {name, Tensor::wrap(const_cast<uint8_t*>(src), shape, dtype, Device::cpu(), owner)});
      continue;
    }
    Tensor tensor = Tensor::empty(shape, dtype);
    if (bytes) std::memcpy(tensor.data_ptr(), src, bytes);
    rec.tensors.push_back({name, std::move(tensor)});
  }
  header.erase("tensors");
  rec.meta = std::move(header);
  return rec;
}

}  // namespace ltx2::runtime
