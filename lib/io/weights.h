// Weight sets and the name-mapping layer.
//
// A WeightSet is every tensor of one or more safetensors files (a monolith checkpoint, the split
// layout's files, or a Hugging Face sharded folder). A WeightView is a component's window into a
// set: it maps the model's own key names onto the file's (prefixes of the monolith, the split
// files, ComfyUI) and loads tensors by name, refusing a missing or mis-shaped tensor with a message
// that names it and the file(s) searched.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace ltx2 {

class WeightSet {
 public:
  // Opens files; a tensor name present in two files is an error.
  static std::shared_ptr<const WeightSet> open(const std::vector<std::string>& paths);
  // A Hugging Face model folder: model.safetensors.index.json (every shard it names must exist)
  // or a single model.safetensors.
  static std::shared_ptr<const WeightSet> open_hf_folder(const std::string& dir);

  const std::vector<std::shared_ptr<SafetensorsFile>>& files() const { return files_; }
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  // Raw view in the stored dtype (CPU, zero-copy).
  Tensor raw(const std::string& name) const;
  // A copy in the stored dtype, read from the file (SafetensorsFile::read: a file truncated since it
  // was opened is an Error, not a SIGBUS; NaN and infinities are refused, naming the tensor).
  Tensor read(const std::string& name) const;
  const SafetensorsFile& file_of(const std::string& name) const;
  std::vector<std::string> names() const;
  // "a.safetensors" or "a.safetensors, b.safetensors" for messages.
  std::string describe() const;
  // The parsed metadata "config" JSON object of the first file that has one (empty object if none).
  const nlohmann::json& config() const;
  // Metadata value of the first file that has the key, or "".
  std::string metadata_value(const std::string& key) const;

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::vector<std::pair<std::string, size_t>> index_;  // sorted name -> file index
  std::shared_ptr<nlohmann::json> config_;
  const std::pair<std::string, size_t>* find(const std::string& name) const;
};

// The value rule of synthesized weights: a pure function of (seed, full tensor name, shape, element
// index), so that a tensor can be made whole (WeightSynthesizer::make) or streamed chunk by chunk
// into a full-size file (pipeline/random_model) with the same values. Element i is uniform(-s, s)
// with s = sqrt(3 / fan-in) for matrices and convolutions (unit variance through a layer), 0.1 for
// vectors, 0.5 for AdaLN tables and learnable registers; norm weights and the latent statistics are
// 1 +- 0.1 (so they neither vanish nor flip signs).
class SynthesizedValues {
 public:
  SynthesizedValues(uint64_t seed, const std::string& full_name, const Shape& shape);
  float at(int64_t i) const {
    // (the top 24 bits, exact as an int32, whose conversion is cheaper than a uint64's)
    const float u =
        static_cast<float>(static_cast<int32_t>(mix(key_ + static_cast<uint64_t>(i)) >> 40)) / 8388608.f -
        1.f;
    return is_norm_ ? 1.f + 0.1f * u : scale_ * u;
  }
  // at(first .. first + count - 1) * gain, rounded to bf16 as Tensor::to does, over the OpenMP
  // threads.
  void fill_bf16(int64_t first, int64_t count, uint16_t* out, float gain = 1.f) const;

  static uint64_t mix(uint64_t x) {  // splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

 private:
  uint64_t key_ = 0;
  bool is_norm_ = false;
  float scale_ = 0.f;
};

// Makes deterministic random weights for `ltx2 make-tiny` and the benchmarks: a WeightView built on
// a synthesizer answers every load(key, shape) with a fresh tensor of that shape (SynthesizedValues
// of the seed and the full name) and records it, so that a model's own loader, run over a
// synthesizer, yields the tensor list of its real checkpoint layout. With `values` false it only
// records names and shapes: the tensors it hands out are left uninitialised (their pages are never
// touched, so planning a full-size model costs no memory), for callers that make the values later.
class WeightSynthesizer {
 public:
  explicit WeightSynthesizer(uint64_t seed, bool values = true) : seed_(seed), values_(values) {}
  Tensor make(const std::string& full_name, const Shape& shape);
  const std::vector<std::pair<std::string, Tensor>>& tensors() const { return tensors_; }

 private:
  uint64_t seed_;
  bool values_;
  std::vector<std::pair<std::string, Tensor>> tensors_;
};

class WeightView {
 public:
  WeightView() = default;
  // Synthesis mode (see WeightSynthesizer): tensors are named `prefix + key`. has() is false for
  // keys not made yet, so models must choose optional tensors from their config, not by probing.
  WeightView(std::shared_ptr<WeightSynthesizer> synth, std::string prefix, std::string component);
  // `prefixes`: candidate file-side prefixes for this component, tried in order (e.g. monolith
  // "vae.decoder." then Comfy-split "decoder."). `component` names it in messages.
  WeightView(std::shared_ptr<const WeightSet> set, std::vector<std::string> prefixes, std::string component);
  // A nested window: "transformer_blocks.3." etc. (keeps the placement).
  WeightView sub(const std::string& prefix) const;
  // The same window whose loads without an explicit dtype go to `dtype` on `device` (a model built
  // over it lands there whole); a fresh view places f32 on the CPU.
  WeightView placed(DType dtype, Device device) const;
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  bool has(const std::string& key) const;
  // Loads key as a tensor of `dtype` on `device` (float weights are converted; f32 on the CPU
  // widens bf16; a tensor with a scale sibling, io/quantization.h, is float(stored) x scale),
  // checking the shape when `expected` is given. Without a dtype: the placement's. Whatever is
  // copied or converted on the CPU comes through WeightSet::read (NaN and infinities refused);
  // weights uploaded to a GPU in their stored dtype are not scanned.
  Tensor load(const std::string& key, const Shape& expected) const;
  Tensor load(const std::string& key, const Shape& expected, DType dtype,
              Device device = Device::cpu()) const;
  Tensor load(const std::string& key) const;
  Tensor load(const std::string& key, DType dtype, Device device = Device::cpu()) const;
  // Key's bytes as stored (an 8-bit weight stays 8-bit, its scale not applied) on `device`, the
  // shape checked. For a quantized linear kept quantized (fp8-scaled-mm); refused while
  // synthesizing.
  Tensor load_stored(const std::string& key, const Shape& expected, Device device) const;
  // The stored dtype of key (throws naming it when missing; refused while synthesizing).
  DType stored_dtype(const std::string& key) const;
  // The stored shape of key (throws naming it when missing).
  Shape shape_of(const std::string& key) const;
  bool synthesizing() const { return synth_ != nullptr; }
  // The underlying set (not available while synthesizing).
  const WeightSet& set() const;
  const std::shared_ptr<const WeightSet>& set_ptr() const { return set_; }
  const std::string& component() const { return component_; }
  // The full file-side name key resolves to, or "" when absent.
  std::string resolve(const std::string& key) const;

 private:
  std::shared_ptr<const WeightSet> set_;
  std::shared_ptr<WeightSynthesizer> synth_;
  std::vector<std::string> prefixes_;
  std::string component_;
  std::string inner_;  // nested prefix added by sub()
  DType dtype_ = DType::F32;
  Device device_ = Device::cpu();
};

}  // namespace ltx2
