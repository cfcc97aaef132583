#include "io/weights.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/quantization.h"

namespace ltx2 {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::shared_ptr<const WeightSet> WeightSet::open(const std::vector<std::string>& paths) {
  LTX2_CHECK(!paths.empty(), "no weight files given");
  auto set = std::make_shared<WeightSet>();
  for (const auto& p : paths) set->files_.push_back(SafetensorsFile::open(p));
  for (size_t f = 0; f < set->files_.size(); ++f)
    for (const auto& t : set->files_[f]->tensors()) set->index_.emplace_back(t.name, f);
  std::sort(set->index_.begin(), set->index_.end());
  for (size_t i = 1; i < set->index_.size(); ++i) {
    LTX2_CHECK(set->index_[i].first != set->index_[i - 1].first, "tensor '{}' appears in both {} and {}",
               set->index_[i].first, set->files_[set->index_[i - 1].second]->path(),
               set->files_[set->index_[i].second]->path());
  }
  set->config_ = std::make_shared<json>(json::object());
  for (const auto& f : set->files_) {
    std::string cfg = f->metadata_value("config");
    if (cfg.empty()) continue;
    try {
      *set->config_ = json::parse(cfg);
    } catch (const json::exception&) {
      LTX2_FAIL("{}: metadata 'config' is not valid JSON", f->path());
    }
    LTX2_CHECK(set->config_->is_object(), "{}: metadata 'config' is not a JSON object", f->path());
    break;
  }
  validate_quantization(*set);
  return set;
}

std::shared_ptr<const WeightSet> WeightSet::open_hf_folder(const std::string& dir) {
  LTX2_CHECK(fs::is_directory(dir), "{}: not a folder", dir);
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!fs::exists(index)) {
    fs::path single = fs::path(dir) / "model.safetensors";
    LTX2_CHECK(fs::exists(single), "{}: has neither model.safetensors.index.json nor model.safetensors", dir);
    return open({single.string()});
  }
  json j;
  try {
    std::ifstream in(index);
    j = json::parse(in);
  } catch (const json::exception&) {
    LTX2_FAIL("{}: not valid JSON", index.string());
  }
  LTX2_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
             "{}: no \"weight_map\" object", index.string());
  std::vector<std::string> shards;
  for (const auto& [name, file] : j["weight_map"].items()) {
    LTX2_CHECK(file.is_string(), "{}: weight_map entry '{}' is not a file name", index.string(), name);
    std::string f = file.get<std::string>();
    LTX2_CHECK(f.find('/') == std::string::npos && f != ".." && !f.empty(),
               "{}: shard name '{}' is not a plain file name", index.string(), f);
    if (std::find(shards.begin(), shards.end(), f) == shards.end()) shards.push_back(f);
  }
  std::vector<std::string> paths;
  for (const auto& s : shards) {
    fs::path p = fs::path(dir) / s;
    LTX2_CHECK(fs::exists(p), "{}: shard '{}' named by the index is missing", dir, s);
    paths.push_back(p.string());
  }
  auto set = open(paths);
  for (const auto& [name, file] : j["weight_map"].items()) {
    LTX2_CHECK(set->contains(name), "{}: tensor '{}' is not in its shard {}", dir, name,
               file.get<std::string>());
  }
  return set;
}

const std::pair<std::string, size_t>* WeightSet::find(const std::string& name) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), name,
                             [](const auto& e, const std::string& n) { return e.first < n; });
  return it != index_.end() && it->first == name ? &*it : nullptr;
}

bool WeightSet::contains(const std::string& name) const {
  return find(name) != nullptr;
}

const SafetensorsFile& WeightSet::file_of(const std::string& name) const {
  auto* e = find(name);
  LTX2_CHECK(e != nullptr, "missing tensor '{}' in {}", name, describe());
  return *files_[e->second];
}

const TensorInfo& WeightSet::info(const std::string& name) const {
  return file_of(name).info(name);
}
Tensor WeightSet::raw(const std::string& name) const {
  return file_of(name).tensor(name);
}
Tensor WeightSet::read(const std::string& name) const {
  return file_of(name).read(name);
}

std::vector<std::string> WeightSet::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& e : index_) out.push_back(e.first);
  return out;
}

std::string WeightSet::describe() const {
  std::string s;
  for (size_t i = 0; i < files_.size() && i < 3; ++i) s += (i ? ", " : "") + files_[i]->path();
  if (files_.size() > 3) s += fmt::format(" and {} more", files_.size() - 3);
  return s;
}

const json& WeightSet::config() const {
  return *config_;
}

std::string WeightSet::metadata_value(const std::string& key) const {
  for (const auto& f : files_) {
    std::string v = f->metadata_value(key);
    if (!v.empty()) return v;
  }
  return "";
}

// ---- WeightSynthesizer -----------------------------------------------------------------------

namespace {
bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

SynthesizedValues::SynthesizedValues(uint64_t seed, const std::string& name, const Shape& shape) {
  key_ = seed;
  for (char ch : name) key_ = mix(key_ ^ static_cast<uint8_t>(ch));
  const int64_t n = shape_numel(shape);
  const int64_t fan_in = shape.size() >= 2 && shape[0] > 0 ? n / shape[0] : 1;
  is_norm_ = shape.size() == 1 && (contains(name, "norm") || contains(name, "std-of-means"));
  scale_ = shape.size() >= 2 ? std::sqrt(3.f / static_cast<float>(std::max<int64_t>(fan_in, 1))) : 0.1f;
  if (contains(name, "scale_shift_table") || contains(name, "learnable_registers")) scale_ = 0.5f;
}

void SynthesizedValues::fill_bf16(int64_t first, int64_t count, uint16_t* out, float gain) const {
#pragma omp parallel for schedule(static) if (count > (1 << 16))
  for (int64_t i = 0; i < count; ++i) out[i] = f32_to_bf16(at(first + i) * gain);
}

Tensor WeightSynthesizer::make(const std::string& name, const Shape& shape) {
  for (const auto& [n, t] : tensors_)
    if (n == name) return t;
  Tensor t = Tensor::empty(shape);
  if (values_) {
    const SynthesizedValues values(seed_, name, shape);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = values.at(i);
  }
  tensors_.emplace_back(name, t);
  return t;
}

// ---- WeightView ----------------------------------------------------------------------------

WeightView::WeightView(std::shared_ptr<WeightSynthesizer> synth, std::string prefix, std::string component)
    : synth_(std::move(synth)), prefixes_{std::move(prefix)}, component_(std::move(component)) {}

WeightView::WeightView(std::shared_ptr<const WeightSet> set, std::vector<std::string> prefixes,
                       std::string component)
    : set_(std::move(set)), prefixes_(std::move(prefixes)), component_(std::move(component)) {
  if (prefixes_.empty()) prefixes_.push_back("");
}

WeightView WeightView::sub(const std::string& prefix) const {
  WeightView v = *this;
  v.inner_ += prefix;
  return v;
}

WeightView WeightView::placed(DType dtype, Device device) const {
  WeightView v = *this;
  v.dtype_ = dtype;
  v.device_ = device;
  return v;
}

Tensor WeightView::load(const std::string& key) const {
  return load(key, dtype_, device_);
}

Tensor WeightView::load(const std::string& key, const Shape& expected) const {
  return load(key, expected, dtype_, device_);
}

std::string WeightView::resolve(const std::string& key) const {
  if (synth_) {
    std::string full = prefixes_[0] + inner_ + key;
    for (const auto& [n, t] : synth_->tensors())
      if (n == full) return full;
    return "";
  }
  for (const auto& p : prefixes_) {
    std::string full = p + inner_ + key;
    if (set_->contains(full)) return full;
  }
  return "";
}

const WeightSet& WeightView::set() const {
  LTX2_CHECK(set_ != nullptr, "{}: weights are being synthesized, not read from files", component_);
  return *set_;
}

bool WeightView::has(const std::string& key) const {
  return !resolve(key).empty();
}

Shape WeightView::shape_of(const std::string& key) const {
  std::string full = resolve(key);
  LTX2_CHECK(!synth_ || !full.empty(), "{}: shape of '{}' asked while synthesizing (load it with its shape)",
             component_, prefixes_[0] + inner_ + key);
  if (synth_) return synth_->make(full, {}).shape();
  LTX2_CHECK(!full.empty(), "{}: missing tensor '{}' in {}", component_, prefixes_[0] + inner_ + key,
             set_->describe());
  return set_->info(full).shape;
}

namespace {

// Refuses a stored shape other than `expected`, naming the tensor and its file.
void require_shape(const WeightView& view, const std::string& key, const Shape& expected) {
  const Shape got = view.shape_of(key);
  LTX2_CHECK(got == expected, "{}: tensor '{}' has shape {}, expected {} ({})", view.component(),
             view.resolve(key), shape_str(got), shape_str(expected),
             view.set().file_of(view.resolve(key)).path());
}

// The stored bytes of the set's tensor `full` on `device`: uploaded from the file to a GPU, read
// (a copy the caller owns, not the mapping) on the host.
Tensor stored_on(const WeightSet& set, const std::string& full, Device device) {
  if (device.is_cpu()) return set.read(full);
  const TensorInfo& info = set.info(full);
  Tensor out = Tensor::empty(info.shape, info.dtype, device);
  set.file_of(full).upload(info, out.data_ptr(), device);
  return out;
}

}  // namespace

Tensor WeightView::load(const std::string& key, DType dtype, Device device) const {
  LTX2_CHECK(!synth_, "{}: '{}' loaded without a shape while synthesizing weights", component_,
             prefixes_[0] + inner_ + key);
  std::string full = resolve(key);
  LTX2_CHECK(!full.empty(), "{}: missing tensor '{}' in {}", component_, prefixes_[0] + inner_ + key,
             set_->describe());
  const TensorInfo& info = set_->info(full);
  // A quantized tensor's value is float(stored) x its scale (validate_quantization vouched for it),
  // formed on the target device from the stored bytes; other conversions happen on the host.
  const std::string scale_name = scale_key_of(full);
  const bool scaled = !scale_name.empty() && set_->contains(scale_name);
  const bool on_device =
      device.is_cuda() && (info.dtype == dtype || !dtype_is_floating(info.dtype) || scaled);
  const Tensor stored = stored_on(*set_, full, on_device ? device : Device::cpu());
  if (scaled) return stored.to_scaled(dtype, set_->read(scale_name).item()).to(device);
  if (dtype_is_floating(stored.dtype()) && stored.dtype() != dtype) return stored.to(dtype).to(device);
  return stored.to(device);
}

DType WeightView::stored_dtype(const std::string& key) const {
  LTX2_CHECK(!synth_, "{}: stored dtype of '{}' asked while synthesizing", component_,
             prefixes_[0] + inner_ + key);
  shape_of(key);  // names a missing tensor
  return set_->info(resolve(key)).dtype;
}

Tensor WeightView::load_stored(const std::string& key, const Shape& expected, Device device) const {
  LTX2_CHECK(!synth_, "{}: '{}' loaded as stored while synthesizing weights", component_,
             prefixes_[0] + inner_ + key);
  require_shape(*this, key, expected);
  return stored_on(*set_, resolve(key), device);
}

Tensor WeightView::load(const std::string& key, const Shape& expected, DType dtype, Device device) const {
  if (synth_) return synth_->make(prefixes_[0] + inner_ + key, expected).to(dtype).to(device);
  require_shape(*this, key, expected);
  return load(key, dtype, device);
}

}  // namespace ltx2
