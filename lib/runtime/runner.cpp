// The runner registry (see runner.h).
#include "runtime/runner.h"

#include <fmt/ranges.h>

#include <map>

namespace ltx2::runtime {
namespace {

std::map<std::string, RunnerFactory>& registry() {
  static std::map<std::string, RunnerFactory> r;
  return r;
}

}  // namespace

const Tensor& Job::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return t.tensor;
  throw JobError(fmt::format("job {} has no input tensor '{}'", id, name), __FILE__, __LINE__);
}

bool register_runner(const std::string& name, RunnerFactory factory) {
  LTX2_CHECK(registry().emplace(name, std::move(factory)).second, "runner '{}' is registered twice", name);
  return true;
}

bool runner_registered(const std::string& name) {
  return registry().count(name) != 0;
}

std::unique_ptr<Runner> make_runner(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::vector<std::string> names;
    for (const auto& [n, f] : registry()) names.push_back(n);
    LTX2_FAIL("unknown runner '{}' (this executable has: {})", name, fmt::join(names, ", "));
  }
  return it->second();
}

}  // namespace ltx2::runtime
