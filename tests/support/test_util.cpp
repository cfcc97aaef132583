#include "support/test_util.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

namespace ltx2::test {

namespace fs = std::filesystem;

std::string golden_dir(const std::string& name) {
  return std::string(LTX2_SOURCE_DIR) + "/tests/data/golden/" + name;
}

ModelPaths fixture_model_paths(const std::string& dir) {
  ModelPaths p;
  p.checkpoint = dir + "/checkpoint.safetensors";
  p.gemma_root = dir + "/gemma";
  p.spatial_upsampler = dir + "/spatial_upsampler.safetensors";
  return p;
}

ScratchDir::ScratchDir(const std::string& tag) {
  path_ = std::string(LTX2_BINARY_DIR) + "/scratch/" + tag + "." + std::to_string(getpid());
  fs::remove_all(path_);
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Tensor random_tensor(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Tensor t = Tensor::empty(shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  if (va.size() != vb.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::fabs(va[i] - vb[i]));
  return m;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace ltx2::test
