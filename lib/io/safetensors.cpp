#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

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

// The index of the first NaN or infinity among n stored values of a floating dtype, or -1 (also for
// integer dtypes). Read off the bits (an all-ones exponent; e4m3fn has no infinity and its NaN is
// S.1111.111): one branch-free pass the compiler vectorises, and a second only when one is found.
template <typename Bits>
int64_t first_non_finite_of(const void* data, int64_t n, Bits mask, Bits special) {
  const auto* v = static_cast<const Bits*>(data);
  Bits any = 0;  // (a bool accumulator stops GCC from vectorising the loop)
  for (int64_t i = 0; i < n; ++i) any |= static_cast<Bits>((v[i] & mask) == special);
  if (!any) return -1;
  for (int64_t i = 0;; ++i)
    if ((v[i] & mask) == special) return i;
}

int64_t first_non_finite(const void* data, int64_t n, DType dtype) {
  switch (dtype) {
    case DType::F32: return first_non_finite_of<uint32_t>(data, n, 0x7f800000u, 0x7f800000u);
    case DType::BF16: return first_non_finite_of<uint16_t>(data, n, 0x7f80, 0x7f80);
    case DType::F16: return first_non_finite_of<uint16_t>(data, n, 0x7c00, 0x7c00);
    case DType::F8E4M3: return first_non_finite_of<uint8_t>(data, n, 0x7f, 0x7f);
    case DType::F8E5M2: return first_non_finite_of<uint8_t>(data, n, 0x7c, 0x7c);
    default: return -1;
  }
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

  // nlohmann keeps the last of two equal keys without a word, but a header naming a tensor (or any
  // key) twice is ambiguous: the keys of every open object are tracked as the parser meets them.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  bool duplicate_at_top = false;
  const json::parser_callback_t track_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key && duplicate.empty() &&
               !open_objects.back().insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
      duplicate_at_top = open_objects.size() == 1 && duplicate != "__metadata__";
    }
    return true;
  };
  json j;
  try {
    j = json::parse(data + 8, data + 8 + n, track_keys);
  } catch (const json::exception& e) {
    // nlohmann's message names the byte; keep only the part after the error id.
    std::string what = e.what();
    auto p = what.find("] ");
    LTX2_FAIL("{}: header is not valid JSON: {}", path, p == std::string::npos ? what : what.substr(p + 2));
  }
  LTX2_CHECK(j.is_object(), "{}: header is not a JSON object", path);
  LTX2_CHECK(duplicate.empty(), "{}: {} '{}' appears twice in the header", path,
             duplicate_at_top ? "tensor" : "key", duplicate);

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
  f->mtime_ns_ = st.st_mtim.tv_sec * int64_t{1000000000} + st.st_mtim.tv_nsec;
  if (f->size_ > 0) {
    f->map_ = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f->map_ == MAP_FAILED) {
      f->map_ = nullptr;
      ::close(fd);
      LTX2_FAIL("{}: cannot map: {}", path, std::strerror(errno));
    }
  }
  f->fd_ = fd;  // kept for read() and upload(): see read()
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
                        fmt::format("{}: tensor '{}'", path_, info.name).c_str());
  check_unchanged(info.name);
}

// Copies from the file go through pread, never through the mapping: pages past the end of a file
// truncated after open() raise SIGBUS when touched, and a handler that jumps out of the faulting
// copy would need to cover every thread a converting copy runs on (OpenMP's included) and to share
// the process-wide handler between loader threads; a short pread is an ordinary error instead. The
// copy out of the page cache is the one a clone from the mapping made anyway. A same-size rewrite
// cannot be told from the bytes, so the file's size and modification time are compared with
// open()'s after each read.
Tensor SafetensorsFile::read(const std::string& name) const {
  constexpr uint64_t kChunkBytes = 4 << 20;  // a multiple of every element size
  const TensorInfo& t = info(name);
  Tensor out = Tensor::empty(t.shape, t.dtype);
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  const uint64_t bytes = t.end - t.begin, start = header_.data_start + t.begin;
  const int64_t esize = static_cast<int64_t>(dtype_size(t.dtype));
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t chunk_end = std::min(bytes, done + kChunkBytes);
    for (uint64_t at = done; at < chunk_end;) {
      const ssize_t n = ::pread(fd_, dst + at, chunk_end - at, static_cast<off_t>(start + at));
      if (n < 0 && errno == EINTR) continue;
      LTX2_CHECK(
          n > 0, "{}: tensor '{}': reading byte {} of the file failed: {}", path_, name, start + at,
          n < 0 ? std::strerror(errno)
                : fmt::format("end of file (it had {} bytes when opened: truncated while loading?)", size_));
      at += static_cast<uint64_t>(n);
    }
    const int64_t bad = first_non_finite(dst + done, static_cast<int64_t>(chunk_end - done) / esize, t.dtype);
    if (bad >= 0) {
      const int64_t index = static_cast<int64_t>(done) / esize + bad;
      LTX2_FAIL("{}: tensor '{}' holds {} (element {} of {}): the checkpoint is corrupt", path_, name,
                out.view({-1}).item({index}), index, shape_str(t.shape));
    }
    done = chunk_end;
  }
  check_unchanged(name);
  return out;
}

void SafetensorsFile::check_unchanged(const std::string& name) const {
  struct stat st {};
  LTX2_CHECK(fstat(fd_, &st) == 0, "{}: cannot stat: {}", path_, std::strerror(errno));
  const int64_t mtime_ns = st.st_mtim.tv_sec * int64_t{1000000000} + st.st_mtim.tv_nsec;
  LTX2_CHECK(static_cast<uint64_t>(st.st_size) == size_ && mtime_ns == mtime_ns_,
             "{}: the file was {} while it was loading (noticed reading tensor '{}')", path_,
             static_cast<uint64_t>(st.st_size) == size_ ? "rewritten" : "truncated or resized", name);
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

namespace {

// Writes all `n` bytes, retrying short writes and EINTR (a stop signal's handler interrupts a
// write; the caller decides between chunks whether to stop). Returns 0 or the errno.
int write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

// The 8-byte length and the JSON header, padded so that the data region starts 8-byte aligned.
std::string header_bytes(const std::string& path, const std::vector<TensorSpec>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    LTX2_CHECK(!t.name.empty() && t.name != "__metadata__", "{}: bad tensor name '{}'", path, t.name);
    LTX2_CHECK(!header.contains(t.name), "{}: tensor '{}' given twice", path, t.name);
    header[t.name] = {{"dtype", dtype_safetensors_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  return out + text;
}

// Fills chunk after chunk of the data region and hands each to a writer thread, so that producing
// the bytes (often the slower part) overlaps the disk; at most two chunks exist at a time.
void stream_data(int fd, const std::string& path, const std::vector<TensorSpec>& tensors,
                 const TensorBytesFn& fill, size_t chunk_bytes) {
  uint64_t total = 0;
  for (const TensorSpec& t : tensors) total += t.nbytes();
  if (total == 0) return;
  const size_t chunk = static_cast<size_t>(std::min<uint64_t>(chunk_bytes, total));
  std::unique_ptr<uint8_t[]> buffers[2] = {std::make_unique_for_overwrite<uint8_t[]>(chunk),
                                           std::make_unique_for_overwrite<uint8_t[]>(chunk)};
  size_t tensor = 0;
  uint64_t in_tensor = 0;  // bytes of `tensor` already produced
  std::future<int> pending;
  auto wait_pending = [&] {
    if (!pending.valid()) return;
    const int err = pending.get();
    LTX2_CHECK(err == 0, "{}: write failed: {}", path, std::strerror(err));
  };
  for (uint64_t done = 0, k = 0; done < total; ++k) {
    uint8_t* buf = buffers[k % 2].get();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, total - done));
    for (size_t filled = 0; filled < n;) {
      while (in_tensor == tensors[tensor].nbytes()) ++tensor, in_tensor = 0;  // skips empty tensors
      const size_t piece =
          static_cast<size_t>(std::min<uint64_t>(n - filled, tensors[tensor].nbytes() - in_tensor));
      fill(tensor, in_tensor, buf + filled, piece);
      filled += piece;
      in_tensor += piece;
    }
    wait_pending();  // the other buffer is free again
    pending = std::async(std::launch::async, [fd, buf, n] { return write_all(fd, buf, n); });
    done += n;
  }
  wait_pending();
}

}  // namespace

void write_safetensors_streamed(const std::string& path, const std::vector<TensorSpec>& tensors,
                                const std::map<std::string, std::string>& metadata, const TensorBytesFn& fill,
                                size_t chunk_bytes) {
  LTX2_CHECK(chunk_bytes >= 8 && chunk_bytes % 8 == 0, "{}: chunk size {} is not a positive multiple of 8",
             path, chunk_bytes);
  const std::string head = header_bytes(path, tensors, metadata);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  LTX2_CHECK(fd >= 0, "{}: cannot create: {}", tmp, std::strerror(errno));
  try {
    const int err = write_all(fd, reinterpret_cast<const uint8_t*>(head.data()), head.size());
    LTX2_CHECK(err == 0, "{}: write failed: {}", path, std::strerror(err));
    stream_data(fd, path, tensors, fill, chunk_bytes);
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    LTX2_FAIL("{}: write failed: {}", path, std::strerror(err));
  }
}

uint64_t safetensors_file_size(const std::vector<TensorSpec>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  uint64_t bytes = header_bytes("safetensors file", tensors, metadata).size();
  for (const TensorSpec& t : tensors) bytes += t.nbytes();
  return bytes;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  std::vector<Tensor> host;
  specs.reserve(tensors.size());
  host.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    host.push_back(t.to(Device::cpu()).contiguous());
    specs.push_back({name, host.back().dtype(), host.back().shape()});
  }
  write_safetensors_streamed(
      path, specs, metadata, [&](size_t i, uint64_t offset, uint8_t* out, size_t bytes) {
        std::memcpy(out, static_cast<const uint8_t*>(host[i].data_ptr()) + offset, bytes);
      });
}

}  // namespace ltx2
