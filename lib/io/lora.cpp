// LoRA file reading: key renaming and lora_A / lora_B pairing.
#include "io/lora.h"

#include "core/error.h"
#include "io/safetensors.h"

namespace ltx2 {
namespace {

constexpr std::string_view kDownSuffix = ".lora_A.weight";
constexpr std::string_view kUpSuffix = ".lora_B.weight";

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// a + b, built by append (operator+ on these trips a GCC 12 -Wrestrict false positive).
std::string concat(const std::string& a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + b.size());
  s.append(a).append(b);
  return s;
}

}  // namespace

std::string lora_renamed_key(const std::string& file_key) {
  static const std::string prefix = "diffusion_model.";
  std::string out = file_key;
  for (size_t pos = out.find(prefix); pos != std::string::npos; pos = out.find(prefix, pos))
    out.erase(pos, prefix.size());
  return out;
}

LoraWeights lora_from_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                              std::string source) {
  LoraWeights lora;
  lora.source = std::move(source);
  std::map<std::string, Tensor> down, up;  // module -> tensor
  for (const auto& [file_key, t] : tensors) {
    const std::string key = lora_renamed_key(file_key);
    if (ends_with(key, kDownSuffix)) {
      down[key.substr(0, key.size() - kDownSuffix.size())] = t;
    } else if (ends_with(key, kUpSuffix)) {
      up[key.substr(0, key.size() - kUpSuffix.size())] = t;
    } else {
      lora.ignored_keys.push_back(key);
    }
  }
  for (const auto& [module, a] : down) {
    auto it = up.find(module);
    if (it == up.end()) {
      lora.ignored_keys.push_back(concat(module, kDownSuffix));
      continue;
    }
    const Tensor& b = it->second;
    LTX2_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(0) == b.size(1),
               "{}: LoRA '{}' has lora_A {} and lora_B {} (expected [rank, in] and [out, rank])", lora.source,
               module, shape_str(a.shape()), shape_str(b.shape()));
    LTX2_CHECK(dtype_is_floating(a.dtype()) && dtype_is_floating(b.dtype()),
               "{}: LoRA '{}' is not floating point", lora.source, module);
    lora.pairs[concat(module, ".weight")] = LoraPair{a, b};
  }
  for (const auto& [module, b] : up)
    if (!down.count(module)) lora.ignored_keys.push_back(concat(module, kUpSuffix));
  return lora;
}

std::shared_ptr<const LoraWeights> read_lora_file(const std::string& path) {
  auto file = SafetensorsFile::open(path);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& info : file->tensors()) tensors.emplace_back(info.name, file->tensor(info.name));
  auto lora = std::make_shared<LoraWeights>(lora_from_tensors(tensors, path));
  LTX2_CHECK(!lora->pairs.empty(), "{}: no LoRA pairs (keys '<module>.lora_A.weight' / '.lora_B.weight')",
             path);
  return lora;
}

}  // namespace ltx2
