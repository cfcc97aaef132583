// Helpers shared by the unit tests: paths to fixtures (and a pipeline fixture's model set) and scratch
// folders, random tensors, and a max-abs-difference helper.
#pragma once

#include <set>
#include <string>

#include "core/tensor.h"
#include "pipeline/request.h"

namespace ltx2::test {

// tests/data/golden/<name>
std::string golden_dir(const std::string& name);
// A pipeline fixture's model set in `dir` (a golden_dir: checkpoint.safetensors, gemma/,
// spatial_upsampler.safetensors); no LoRA.
ModelPaths fixture_model_paths(const std::string& dir);
// The tiny LTX-2.5 split set with the diffusion video decoder (pipeline_distilled_25_dvae's
// model_paths: pipeline_distilled_25's transformer, gemma4_tiny's text encoder, the case's video VAE,
// pipeline_distilled's audio VAE and upsampler); no duration head.
ModelPaths diffusion_decoder_set_paths();
// A fresh empty folder under the build tree, removed when the object dies.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Deterministic uniform(-1, 1) values.
Tensor random_tensor(const Shape& shape, uint64_t seed);
float max_abs_diff(const Tensor& a, const Tensor& b);
// Writes raw bytes to a file.
void write_bytes(const std::string& path, const std::string& bytes);
// The names of the entries of a folder (files and folders, not recursive).
std::set<std::string> names_in(const std::string& dir);
// A file's bytes ("" when it cannot be read).
std::string read_bytes(const std::string& path);
// Little-endian integers at byte `at` of `bytes` (WAV and other headers).
uint16_t le_u16(const std::string& bytes, size_t at);
uint32_t le_u32(const std::string& bytes, size_t at);

}  // namespace ltx2::test
