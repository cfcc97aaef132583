// `ltx2 make-tiny DIR` (see make_tiny_command.h): writes the set, then lists each file and its size.
#include "make_tiny_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "model_sets/tiny_model.h"

namespace ltx2 {

namespace fs = std::filesystem;

CLI::App* add_make_tiny_command(CLI::App& app, MakeTinyOptions& options) {
  auto* cmd = app.add_subcommand("make-tiny",
                                 "Write a tiny model set (transformer, VAEs, vocoder, upsampler, LoRA, "
                                 "Gemma + tokenizer) with deterministic random weights in the real layouts");
  cmd->add_option("dir", options.dir, "output folder (created if missing)")->required();
  return cmd;
}

int run_make_tiny(const MakeTinyOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const model_sets::TinyModelPaths paths = model_sets::write_tiny_model_set(options.dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::pair<std::string, uintmax_t>> files;
  for (const auto& entry : fs::recursive_directory_iterator(paths.dir))
    if (entry.is_regular_file())
      files.emplace_back(fs::relative(entry.path(), paths.dir).string(), entry.file_size());
  std::sort(files.begin(), files.end());
  uintmax_t total = 0;
  for (const auto& [name, bytes] : files) {
    total += bytes;
    std::printf("%10ju  %s\n", bytes, name.c_str());
  }
  std::printf("%10ju  total (%s, %.1f s)\n", total, model_sets::kTinyModelVersion, seconds);
  return 0;
}

}  // namespace ltx2
