// The body of the generation programs (ltx2-distilled, ltx2-ti2vid, ltx2-ti2vid-hq, ltx2-one-stage,
// ltx2-keyframes): flags, validation before any work, the engine (loaded
// once), one request or a --jobs file of them, MP4 output, progress and timings, and a clean stop
// on SIGINT/SIGTERM (no output file left). Exit codes: 0 done, 1 error (or any --jobs line failed),
// 2 usage, 128 + signal when interrupted.
#pragma once

#include "pipeline/request.h"

namespace ltx2::cli {

int run_generation_program(int argc, char** argv, PipelineKind kind, const char* program);

}  // namespace ltx2::cli
