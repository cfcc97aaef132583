// `ltx2 make-tiny DIR`: writes the tiny model set (pipeline/tiny_model.h) into DIR.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ltx2 {

struct MakeTinyOptions {
  std::string dir;
};

CLI::App* add_make_tiny_command(CLI::App& app, MakeTinyOptions& options);
int run_make_tiny(const MakeTinyOptions& options);

}  // namespace ltx2
