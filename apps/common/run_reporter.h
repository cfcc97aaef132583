// What the generation programs tell the user while they work, in one of three forms: progress
// bars (text format, stderr a terminal), plain log lines (text format otherwise), or JSON lines
// (--log-format json: every line on stderr is one JSON object; ours have an "event" field: "log",
// "job", "progress", "output", "timings", "error"; the library's log lines have time, level and
// msg). Everything goes to stderr; stdout stays empty.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/phase_clock.h"

namespace ltx2::cli {

enum class LogFormat { Text, Json };

class RunReporter {
 public:
  RunReporter(std::string program, LogFormat format);
  LogFormat format() const { return format_; }

  void info(const std::string& message);
  // A job of a --jobs file begins (line: its line number; 0 for the command line's request).
  void job(int line, const std::string& prompt, const std::string& output_path);
  // Step `step` (0-based) of `steps` of a stage is done.
  void progress(const std::string& stage, int step, int steps);
  // frames 0: an audio-only output.
  void output(const std::string& path, int64_t frames, int width, int height, double seconds);
  void timings(const std::vector<PhaseTime>& phases, double total_seconds);
  // One line; `line` > 0 names the --jobs line at fault.
  void error(const std::string& message, int line = 0);

 private:
  std::string program_;
  LogFormat format_;
  bool bars_;              // text format on a terminal
  bool bar_open_ = false;  // a progress bar is drawn on the current line
  void end_bar();
  void emit_json(const nlohmann::json& j);
};

}  // namespace ltx2::cli
