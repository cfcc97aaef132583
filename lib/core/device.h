// Where a tensor's bytes live: host memory or one CUDA device.
#pragma once

#include <cstdint>
#include <string>

namespace ltx2 {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int i) { return {DeviceType::CUDA, i}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && (is_cpu() || index == o.index); }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
  // Parses "cpu", "cuda", "cuda:N"; throws ltx2::Error otherwise.
  static Device parse(const std::string& s);
};

// True when this binary was built with the CUDA backend.
bool cuda_built();

}  // namespace ltx2
