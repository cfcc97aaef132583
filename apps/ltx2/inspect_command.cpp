#include "inspect_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/layout.h"
#include "io/quantization.h"
#include "io/weights.h"

namespace ltx2 {

using json = nlohmann::json;

namespace {

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

// The config section that belongs to a component, or null.
json component_config(const WeightSet& set, Component c, const std::string& folder_config) {
  if (c == Component::TextModel && !folder_config.empty()) return json::parse(folder_config);
  const char* key = component_config_key(c);
  if (!key) return nullptr;
  const json& cfg = set.config();
  if (std::string(key).empty()) return cfg.empty() ? json(nullptr) : cfg;
  auto it = cfg.find(key);
  return it == cfg.end() ? json(nullptr) : *it;
}

// Every tensor stored with a scale (an FP8 checkpoint's quantized linears): its dtype, its scale
// and, where the file has one, the linear's static input scale.
json quantized_tensors(const WeightSet& set) {
  json out = json::array();
  for (const std::string& name : set.names()) {
    const std::string scale = scale_key_of(name);
    if (scale.empty() || !set.contains(scale)) continue;
    json q = {{"tensor", name},
              {"dtype", dtype_safetensors_name(set.info(name).dtype)},
              {scale.substr(scale.rfind('.') + 1), set.raw(scale).item()}};
    const std::string input_scale = input_scale_key_of(name);
    if (!input_scale.empty() && set.contains(input_scale)) q["input_scale"] = set.raw(input_scale).item();
    out.push_back(q);
  }
  return out;
}

json inspect_one(const std::string& path) {
  namespace fs = std::filesystem;
  std::shared_ptr<const WeightSet> set;
  std::string folder_config;
  if (fs::is_directory(path)) {
    set = WeightSet::open_hf_folder(path);
    fs::path cfg = fs::path(path) / "config.json";
    if (fs::exists(cfg)) {
      std::ifstream in(cfg);
      folder_config = std::string(std::istreambuf_iterator<char>(in), {});
    }
  } else {
    set = WeightSet::open({path});
  }
  json out = {{"path", path}, {"files", json::array()}, {"components", json::array()}};
  uint64_t total = 0;
  size_t count = 0;
  for (const auto& f : set->files()) {
    out["files"].push_back({{"path", f->path()}, {"bytes", f->file_size()}, {"tensors", f->tensors().size()}});
    json meta = json::object();
    for (const auto& [k, v] : f->metadata())
      if (k != "config") meta[k] = v.size() > 200 ? v.substr(0, 200) + "..." : v;
    if (!meta.empty()) out["metadata"] = meta;
  }
  for (const auto& s : summarize_components(*set)) {
    json c = {{"component", component_name(s.component)}, {"tensors", s.tensors}, {"bytes", s.bytes},
              {"dtypes", s.dtypes}};
    json cfg = component_config(*set, s.component, folder_config);
    if (!cfg.is_null()) c["config"] = cfg;
    out["components"].push_back(c);
    total += s.bytes;
    count += s.tensors;
  }
  out["tensors"] = count;
  out["bytes"] = total;
  const json quantized = quantized_tensors(*set);
  if (!quantized.empty()) out["quantized"] = quantized;
  return out;
}

void print_text(const json& j) {
  std::printf("%s: %zu tensors, %s\n", j["path"].get<std::string>().c_str(), j["tensors"].get<size_t>(),
              human_bytes(j["bytes"].get<uint64_t>()).c_str());
  if (j.contains("metadata"))
    for (const auto& [k, v] : j["metadata"].items())
      std::printf("  metadata %s = %s\n", k.c_str(), v.get<std::string>().c_str());
  for (const auto& c : j["components"]) {
    std::string dtypes;
    for (const auto& [k, v] : c["dtypes"].items()) dtypes += fmt::format("{}{} x{}", dtypes.empty() ? "" : ", ", k, v.get<size_t>());
    std::printf("  %-22s %6zu tensors %12s  (%s)\n", c["component"].get<std::string>().c_str(),
                c["tensors"].get<size_t>(), human_bytes(c["bytes"].get<uint64_t>()).c_str(), dtypes.c_str());
    if (c.contains("config")) {
      std::string cfg = c["config"].dump();
      if (cfg.size() > 400) cfg = cfg.substr(0, 400) + "...";
      std::printf("      config %s\n", cfg.c_str());
    }
  }
  if (!j.contains("quantized")) return;
  // One summary line per stored dtype; --json lists every tensor.
  std::map<std::string, std::pair<size_t, std::pair<float, float>>> by_dtype;
  for (const auto& q : j["quantized"]) {
    const float s =
        q.contains("weight_scale") ? q["weight_scale"].get<float>() : q["bias_scale"].get<float>();
    auto [it, fresh] = by_dtype.try_emplace(q["dtype"].get<std::string>(), 0, std::pair{s, s});
    ++it->second.first;
    it->second.second.first = std::min(it->second.second.first, s);
    it->second.second.second = std::max(it->second.second.second, s);
  }
  for (const auto& [dtype, stats] : by_dtype)
    std::printf("  quantized %zu tensors stored as %s with a scale (%g .. %g; --json lists each)\n",
                stats.first, dtype.c_str(), stats.second.first, stats.second.second);
}

}  // namespace

int run_inspect(const std::vector<std::string>& paths, bool as_json) {
  json all = json::array();
  for (const auto& p : paths) all.push_back(inspect_one(p));
  if (as_json) {
    std::printf("%s\n", (paths.size() == 1 ? all[0] : all).dump(2).c_str());
  } else {
    for (const auto& j : all) print_text(j);
  }
  return 0;
}

}  // namespace ltx2
