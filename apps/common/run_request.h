// One generation into its output (common/clip_file.h, in the engine's output format), timed per phase: frames
// go to the encoder as the decoder hands them over, SIGINT/SIGTERM are honoured between steps (an Error; the
// partial output is removed), and the output is renamed into place only when complete.
#pragma once

#include <cstdint>
#include <vector>

#include "common/phase_clock.h"
#include "common/run_reporter.h"
#include "core/device.h"
#include "pipeline/generation_engine.h"

namespace ltx2::cli {

struct RunResult {
  int64_t frames = 0;
  int width = 0, height = 0;
  std::vector<PhaseTime> phases;
  double total_seconds = 0;
};

// Throws ltx2::Error naming the signal when SIGINT or SIGTERM has been received.
void stop_if_requested();

// `reporter` may be null (no progress shown). A GPU `memory_device` (the in-process engine's) gets
// each phase's memory high-water mark recorded (the bytes allocated, cached blocks not counted: as
// torch's max_memory_allocated, which the reference's numbers are). Throws
// ltx2::Error on failure or interruption.
RunResult run_request(pipeline::GenerationEngine& engine, const GenerationRequest& r, RunReporter* reporter,
                      Device memory_device = Device::cpu());

}  // namespace ltx2::cli
