// `ltx2 make-random DIR --model 19b|22b [--layout monolith|split] [--layers N] [--seed S]
// [--only PARTS]`: writes a full-size model set with deterministic random weights
// (pipeline/random_model.h) into DIR.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ltx2 {

struct MakeRandomOptions {
  std::string dir;
  std::string model;
  std::string layout = "monolith";
  int64_t layers = 48;
  uint64_t seed = 0;
  std::vector<std::string> only;
};

CLI::App* add_make_random_command(CLI::App& app, MakeRandomOptions& options);
int run_make_random(const MakeRandomOptions& options);

}  // namespace ltx2
