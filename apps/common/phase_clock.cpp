#include "common/phase_clock.h"

namespace ltx2::cli {

double seconds_since(PhaseClock::Clock::time_point t) {
  return std::chrono::duration<double>(PhaseClock::Clock::now() - t).count();
}

PhaseClock::PhaseClock(std::function<double()> memory_peak)
    : memory_peak_(std::move(memory_peak)), start_(Clock::now()), mark_(start_) {
  if (memory_peak_) memory_peak_();  // the first phase's mark starts here
}

std::string PhaseClock::label(const std::string& stage) {
  if (stage == "text_encode") return "text encode";
  if (stage == "stage1") return "stage 1";
  if (stage == "stage2") return "stage 2";
  if (stage == "video_decode") return "decode";
  return stage;
}

void PhaseClock::close(const std::string& stage) {
  // One reading ends this phase and starts the next, so the phases add up to the total exactly
  // (a second reading lost the time in between, the memory probe's included, from every phase).
  const Clock::time_point now = Clock::now();
  // Encoding done since the last mark happened inside this phase's wall time.
  const double s = std::chrono::duration<double>(now - mark_).count() - (encode_seconds_ - encode_at_mark_);
  phases_.push_back({label(stage), s, memory_peak_ ? memory_peak_() : -1.0});
  mark_ = now;
  encode_at_mark_ = encode_seconds_;
}

void PhaseClock::on_progress(const std::string& stage, int step, int steps) {
  if (step + 1 >= steps) close(stage);
}

void PhaseClock::end_run() {
  close("audio");
}

std::vector<PhaseTime> PhaseClock::phases() const {
  std::vector<PhaseTime> out = phases_;
  out.push_back({"write output", encode_seconds_, -1.0});
  return out;
}

double PhaseClock::total_seconds() const {
  return std::chrono::duration<double>(mark_ - start_).count() + (encode_seconds_ - encode_at_mark_);
}

}  // namespace ltx2::cli
