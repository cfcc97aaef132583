// Wall time per phase of one generation, read off the pipeline's progress events: "text_encode",
// "upsample" and "video_decode" end their phases, the last step of "stage1" / "stage2" ends a
// stage, and what follows the last event until the run returns is the audio (decoder + vocoder).
// Time spent writing the output inside the decode callbacks is counted as "write output", not as decode,
// so the phases add up to the total. With a memory probe each phase also records the GPU memory
// high-water mark it reached.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ltx2::cli {

struct PhaseTime {
  std::string name;  // "text encode", "stage 1", "upsample", "stage 2", "decode", "audio", "write output"
  double seconds;
  double peak_gib = -1;  // the GPU memory high-water mark in the phase; < 0: not measured
};

class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;

  // `memory_peak` (may be empty): the GiB high-water mark since its last call, restarting it.
  explicit PhaseClock(std::function<double()> memory_peak = {});
  void on_progress(const std::string& stage, int step, int steps);
  // Seconds spent encoding and writing the output (inside or after the run).
  void add_encode_seconds(double s) { encode_seconds_ += s; }
  // Closes the last phase (now); call once the run has returned.
  void end_run();
  // The phases in order, then "write output"; phases that reported nothing are left out.
  std::vector<PhaseTime> phases() const;
  double total_seconds() const;

  static std::string label(const std::string& stage);

 private:
  std::function<double()> memory_peak_;
  Clock::time_point start_, mark_;
  std::vector<PhaseTime> phases_;
  double encode_seconds_ = 0, encode_at_mark_ = 0;
  void close(const std::string& stage);
};

// Seconds since `t`.
double seconds_since(PhaseClock::Clock::time_point t);

}  // namespace ltx2::cli
