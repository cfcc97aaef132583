// A process-wide engine choice of the CUDA backend (attention: LTX2_ATTENTION and
// LTX2_ATTENTION_PRECISION, convolutions: LTX2_CONV): read from its environment variable on first
// use (`unset` when unset: Engine::Auto unless given), then settable by programs, benches and
// tests. `parse` refuses an unknown name, naming the variable.
#pragma once

#include <atomic>
#include <cstdlib>
#include <string>

namespace ltx2::ops {

template <typename Engine>
std::atomic<Engine>& engine_setting(const char* variable,
                                    Engine (*parse)(const std::string& name, const std::string& what),
                                    Engine unset = Engine::Auto) {
  static std::atomic<Engine> mode{[&] {
    const char* env = std::getenv(variable);
    return env && *env ? parse(env, variable) : unset;
  }()};
  return mode;
}

}  // namespace ltx2::ops
