// One golden case folder (format: tests/data/golden/README.md): case.json, io.safetensors with
// in.* / out.* / mid.* tensors, and optionally weights.safetensors and other model files.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/weights.h"

namespace ltx2::golden {

class GoldenCase {
 public:
  // Reads case.json and io.safetensors; throws ltx2::Error naming what is missing or malformed.
  explicit GoldenCase(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::string name() const;
  const nlohmann::json& spec() const { return spec_; }
  const SafetensorsFile& io() const { return *io_; }
  bool has(const std::string& tensor) const { return io_->contains(tensor); }
  // io tensor as f32 (or i64 when stored as integers), owned (copied out of the mapping).
  Tensor tensor(const std::string& name) const;
  // io tensor names starting with prefix, sorted.
  std::vector<std::string> names(const std::string& prefix) const;
  // weights.safetensors (or another file of the folder) as a weight set.
  std::shared_ptr<const WeightSet> weights(const std::string& file = "weights.safetensors") const;
  std::string path(const std::string& file) const;

 private:
  std::string dir_;
  nlohmann::json spec_;
  std::shared_ptr<SafetensorsFile> io_;
};

}  // namespace ltx2::golden
