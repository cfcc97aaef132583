#include "golden/golden_case.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace ltx2::golden {

namespace fs = std::filesystem;

GoldenCase::GoldenCase(const std::string& dir) : dir_(dir) {
  LTX2_CHECK(fs::is_directory(dir), "{}: not a folder", dir);
  fs::path spec = fs::path(dir) / "case.json";
  LTX2_CHECK(fs::exists(spec), "{}: no case.json", dir);
  try {
    std::ifstream in(spec);
    spec_ = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    LTX2_FAIL("{}: not valid JSON", spec.string());
  }
  LTX2_CHECK(spec_.is_object(), "{}: not a JSON object", spec.string());
  fs::path io = fs::path(dir) / "io.safetensors";
  LTX2_CHECK(fs::exists(io), "{}: no io.safetensors", dir);
  io_ = SafetensorsFile::open(io.string());
}

std::string GoldenCase::name() const {
  std::string n = fs::path(dir_).filename().string();
  return n.empty() ? fs::path(dir_).parent_path().filename().string() : n;
}

Tensor GoldenCase::tensor(const std::string& name) const {
  Tensor t = io_->tensor(name);
  if (t.dtype() == DType::I64 || t.dtype() == DType::I32 || t.dtype() == DType::Bool)
    return t.to(DType::I64).clone();
  return t.dtype() == DType::F32 ? t.clone() : t.to(DType::F32);
}

std::vector<std::string> GoldenCase::names(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const auto& t : io_->tensors())
    if (t.name.rfind(prefix, 0) == 0) out.push_back(t.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::string GoldenCase::path(const std::string& file) const {
  return (fs::path(dir_) / file).string();
}

std::shared_ptr<const WeightSet> GoldenCase::weights(const std::string& file) const {
  return WeightSet::open({path(file)});
}

}  // namespace ltx2::golden
