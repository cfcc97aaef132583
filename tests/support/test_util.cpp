#include "support/test_util.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
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

ModelPaths diffusion_decoder_set_paths() {
  ModelPaths p;
  p.transformer = golden_dir("pipeline_distilled_25") + "/transformer.safetensors";
  p.text_encoder = golden_dir("gemma4_tiny") + "/text_encoder.safetensors";
  p.video_vae = golden_dir("pipeline_distilled_25_dvae") + "/video_vae.safetensors";
  p.audio_vae = golden_dir("pipeline_distilled") + "/checkpoint.safetensors";
  p.spatial_upsampler = golden_dir("pipeline_distilled") + "/spatial_upsampler.safetensors";
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

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

uint16_t le_u16(const std::string& bytes, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(bytes[at]) | static_cast<uint8_t>(bytes[at + 1]) << 8);
}

uint32_t le_u32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

}  // namespace ltx2::test
