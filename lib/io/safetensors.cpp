#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/cuda/memory.h"
#include "core/error.h"

namespace ltx2 {

using json = nlohmann::json;

namespace {

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

TensorInfo parse_entry(const std::string& path, const std::string& name, const json& e, uint64_t data_size) {
  auto bad = [&](const std::string& why) { LTX2_FAIL("{}: tensor '{}': {}", path, name, why); };
  if (!e.is_object()) bad("entry is not a JSON object");
  TensorInfo t;
  t.name = name;
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) bad("missing or non-string \"dtype\"");
  if (!dtype_from_safetensors(dt->get<std::string>(), &t.dtype))
    bad("unsupported dtype '" + dt->get<std::string>() + "'");
  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array()) bad("missing or non-array \"shape\"");
  if (sh->size() > 16) bad("shape has " + std::to_string(sh->size()) + " dimensions");
  // numel in 128-bit-safe steps: stop at the first overflow past the data region's size.
  uint64_t numel = 1;
  bool overflow = false;
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned()) bad("shape entry " + d.dump() + " is not a non-negative integer");
    uint64_t v = d.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) bad("shape entry too large");
    t.shape.push_back(static_cast<int64_t>(v));
    if (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v) overflow = true;
    numel *= v;
  }
  auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    bad("\"data_offsets\" must be two non-negative integers");
  t.begin = (*off)[0].get<uint64_t>();
  t.end = (*off)[1].get<uint64_t>();
  if (t.begin > t.end) bad(fmt::format("data_offsets [{}, {}] are reversed", t.begin, t.end));
  if (t.end > data_size)
    bad(fmt::format("data_offsets [{}, {}] run past the end of the data ({} bytes; file truncated?)", t.begin,
                    t.end, data_size));
  uint64_t esize = dtype_size(t.dtype);
  if (overflow || numel > std::numeric_limits<uint64_t>::max() / esize || numel * esize != t.end - t.begin)
    bad(fmt::format("shape {} of {} needs {} bytes but data_offsets give {}", shape_str(t.shape),
                    dtype_safetensors_name(t.dtype),
                    overflow ? std::string("too many") : std::to_string(numel * esize), t.end - t.begin));
  for (const auto& [k, v] : e.items()) {
    if (k != "dtype" && k != "shape" && k != "data_offsets") bad("unknown field '" + k + "'");
  }
  return t;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, uint64_t file_size,
                                           const std::string& path) {
  LTX2_CHECK(file_size >= 8 && size >= 8,
             "{}: not a safetensors file ({} bytes, shorter than the 8-byte header length)", path, file_size);
  uint64_t n = read_u64_le(data);
  LTX2_CHECK(n <= kMaxSafetensorsHeader, "{}: header length {} exceeds the {} MiB limit", path, n,
             kMaxSafetensorsHeader >> 20);
  LTX2_CHECK(n <= file_size - 8, "{}: header length {} runs past the end of the {}-byte file", path, n,
             file_size);
  LTX2_CHECK(size >= 8 + n, "{}: header not fully available", path);
  SafetensorsHeader h;
  h.data_start = 8 + n;
  uint64_t data_size = file_size - h.data_start;

  json j;
  try {
    j = json::parse(data + 8, data + 8 + n);
  } catch (const json::exception& e) {
    // nlohmann's message names the byte; keep only the part after the error id.
    std::string what = e.what();
    auto p = what.find("] ");
    LTX2_FAIL("{}: header is not valid JSON: {}", path, p == std::string::npos ? what : what.substr(p + 2));
  }
  LTX2_CHECK(j.is_object(), "{}: header is not a JSON object", path);

  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      LTX2_CHECK(value.is_object(), "{}: \"__metadata__\" is not a JSON object", path);
      for (const auto& [mk, mv] : value.items()) {
        LTX2_CHECK(mv.is_string(), "{}: metadata value of '{}' is not a string", path, mk);
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(path, key, value, data_size));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < h.tensors.size(); ++i) {
    const TensorInfo& a = h.tensors[i - 1];
    const TensorInfo& b = h.tensors[i];
    // Empty tensors occupy no bytes and may sit anywhere.
    if (a.end > b.begin && a.begin != a.end && b.begin != b.end)
      LTX2_FAIL("{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", path, a.name, a.begin, a.end, b.name,
                b.begin, b.end);
  }
  return h;
}

// ---- reader --------------------------------------------------------------------------------

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  LTX2_CHECK(fd >= 0, "{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    LTX2_FAIL("{}: not a regular file", path);
  }
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ > 0) {
    f->map_ = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f->map_ == MAP_FAILED) {
      f->map_ = nullptr;
      ::close(fd);
      LTX2_FAIL("{}: cannot map: {}", path, std::strerror(errno));
    }
  }
  f->fd_ = fd;  // kept for upload(): reading straight into pinned buffers beats the mapping
  f->header_ = parse_safetensors_header(static_cast<const uint8_t*>(f->map_), f->size_, f->size_, path);
  for (size_t i = 0; i < f->header_.tensors.size(); ++i) f->index_[f->header_.tensors[i].name] = i;
  f->self_ = f;
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsFile::upload(const TensorInfo& info, void* dst, Device device) const {
  LTX2_CHECK(device.is_cuda(), "{}: upload of '{}' to {} (only GPUs take uploads)", path_, info.name,
             device.str());
  cuda_upload_from_file(fd_, header_.data_start + info.begin, info.end - info.begin, dst, device.index,
                        info.name.c_str());
}

std::string SafetensorsFile::metadata_value(const std::string& key) const {
  auto it = header_.metadata.find(key);
  return it == header_.metadata.end() ? "" : it->second;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = index_.find(name);
  LTX2_CHECK(it != index_.end(), "{}: no tensor named '{}'", path_, name);
  return header_.tensors[it->second];
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const TensorInfo& t = info(name);
  auto* base = static_cast<uint8_t*>(map_) + header_.data_start + t.begin;
  // The mapping is private and read-only: the Tensor type has no const flavour, so callers must
  // not write (they would fault, not corrupt the file).
  return Tensor::wrap(base, t.shape, t.dtype, Device::cpu(), self_.lock());
}

// ---- writer --------------------------------------------------------------------------------

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    LTX2_CHECK(!name.empty() && name != "__metadata__", "{}: bad tensor name '{}'", path, name);
    LTX2_CHECK(!header.contains(name), "{}: tensor '{}' given twice", path, name);
    Tensor c = t.to(Device::cpu()).contiguous();
    header[name] = {{"dtype", dtype_safetensors_name(c.dtype())},
                    {"shape", c.shape()},
                    {"data_offsets", {offset, offset + c.nbytes()}}};
    offset += c.nbytes();
    host.push_back(c);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data region 8-byte aligned

  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  LTX2_CHECK(f != nullptr, "{}: cannot create: {}", tmp, std::strerror(errno));
  bool ok = true;
  uint8_t len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  ok = ok && std::fwrite(len, 1, 8, f) == 8;
  ok = ok && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  for (const Tensor& c : host) {
    if (c.nbytes()) ok = ok && std::fwrite(c.data_ptr(), 1, c.nbytes(), f) == c.nbytes();
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    LTX2_FAIL("{}: write failed: {}", path, std::strerror(err));
  }
}

}  // namespace ltx2
