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

// Makes deterministic random weights for `ltx2 make-tiny`: a WeightView built on a synthesizer
// answers every load(key, shape) with a fresh tensor of that shape (values from the seed and the
// full name; scaled by fan-in, norms near 1, statistics positive) and records it, so that a model's
// own loader, run over a synthesizer, yields the tensor list of its real checkpoint layout.
class WeightSynthesizer {
 public:
  explicit WeightSynthesizer(uint64_t seed) : seed_(seed) {}
  Tensor make(const std::string& full_name, const Shape& shape);
  const std::vector<std::pair<std::string, Tensor>>& tensors() const { return tensors_; }

 private:
  uint64_t seed_;
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
  WeightView(std::shared_ptr<const WeightSet> set, std::vector<std::string> prefixes,
             std::string component);
  // A nested window: "transformer_blocks.3." etc. (keeps the placement).
  WeightView sub(const std::string& prefix) const;
  // The same window whose loads without an explicit dtype go to `dtype` on `device` (a model built
  // over it lands there whole); a fresh view places f32 on the CPU.
  WeightView placed(DType dtype, Device device) const;
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  bool has(const std::string& key) const;
  // Loads key as a tensor of `dtype` on `device` (float weights are converted; f32 on the CPU
  // widens bf16), checking the shape when `expected` is given. Without a dtype: the placement's.
  Tensor load(const std::string& key, const Shape& expected) const;
  Tensor load(const std::string& key, const Shape& expected, DType dtype,
              Device device = Device::cpu()) const;
  Tensor load(const std::string& key) const;
  Tensor load(const std::string& key, DType dtype, Device device = Device::cpu()) const;
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
