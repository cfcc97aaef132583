#include "common/run_reporter.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/log.h"

namespace ltx2::cli {

using json = nlohmann::json;

RunReporter::RunReporter(std::string program, LogFormat format)
    : program_(std::move(program)),
      format_(format),
      bars_(format == LogFormat::Text && isatty(STDERR_FILENO)) {
  set_log_json(format == LogFormat::Json);
}

// Bytes that are not UTF-8 (a path, a prompt, an error quoting either) become U+FFFD instead of
// making dump() throw: a log line never ends the program.
void RunReporter::emit_json(const json& j) {
  std::fprintf(stderr, "%s\n", j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stderr);
}

void RunReporter::end_bar() {
  if (!bar_open_) return;
  std::fputc('\n', stderr);
  bar_open_ = false;
}

void RunReporter::info(const std::string& message) {
  if (format_ == LogFormat::Json) return emit_json(json{{"event", "log"}, {"message", message}});
  end_bar();
  log_info("{}", message);
}

void RunReporter::job(int line, const std::string& prompt, const std::string& output_path) {
  if (format_ == LogFormat::Json) {
    json j{{"event", "job"}, {"prompt", prompt}, {"output_path", output_path}};
    if (line > 0) j["line"] = line;
    return emit_json(j);
  }
  info(line > 0 ? fmt::format("line {}: {} -> {}", line, prompt, output_path)
                : fmt::format("{} -> {}", prompt, output_path));
}

void RunReporter::progress(const std::string& stage, int step, int steps) {
  const std::string name = PhaseClock::label(stage);
  if (format_ == LogFormat::Json)
    return emit_json(json{{"event", "progress"}, {"stage", name}, {"step", step + 1}, {"steps", steps}});
  if (!bars_) return info(fmt::format("{} {}/{}", name, step + 1, steps));
  constexpr int kWidth = 30;
  const int filled = steps > 0 ? (step + 1) * kWidth / steps : kWidth;
  std::fprintf(stderr, "\r%-12s [%s%s] %d/%d", name.c_str(), std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), step + 1, steps);
  std::fflush(stderr);
  bar_open_ = true;
  if (step + 1 >= steps) end_bar();
}

void RunReporter::output(const std::string& path, int64_t frames, int width, int height, double seconds) {
  if (format_ == LogFormat::Json)
    return emit_json(json{{"event", "output"},
                          {"path", path},
                          {"frames", frames},
                          {"width", width},
                          {"height", height},
                          {"seconds", seconds}});
  if (frames == 0) return info(fmt::format("wrote {} (audio only) in {:.2f} s", path, seconds));
  info(fmt::format("wrote {} ({} frames, {}x{}) in {:.2f} s", path, frames, width, height, seconds));
}

void RunReporter::timings(const std::vector<PhaseTime>& phases, double total_seconds) {
  if (format_ == LogFormat::Json) {
    json p = json::object(), peaks = json::object();
    for (const PhaseTime& t : phases) {
      p[t.name] = t.seconds;
      if (t.peak_gib >= 0) peaks[t.name] = t.peak_gib;
    }
    json j{{"event", "timings"}, {"phases", p}, {"total", total_seconds}};
    if (!peaks.empty()) j["peak_gpu_gib"] = peaks;
    return emit_json(j);
  }
  std::string text = "timings:";
  for (const PhaseTime& t : phases)
    text += t.peak_gib >= 0 ? fmt::format(" {} {:.2f} s ({:.1f} GiB),", t.name, t.seconds, t.peak_gib)
                            : fmt::format(" {} {:.2f} s,", t.name, t.seconds);
  info(text + fmt::format(" total {:.2f} s", total_seconds));
}

void RunReporter::error(const std::string& message, int line) {
  end_bar();
  if (format_ == LogFormat::Json) {
    json j{{"event", "error"}, {"message", message}};
    if (line > 0) j["line"] = line;
    return emit_json(j);
  }
  if (line > 0)
    std::fprintf(stderr, "%s: error: line %d: %s\n", program_.c_str(), line, message.c_str());
  else
    std::fprintf(stderr, "%s: error: %s\n", program_.c_str(), message.c_str());
}

}  // namespace ltx2::cli
