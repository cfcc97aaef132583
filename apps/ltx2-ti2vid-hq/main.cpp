// `ltx2-ti2vid-hq`: the HQ two-stage text/image-to-video pipeline (the res_2s sampler in both
// stages, the distilled LoRA in both), one process (or, with --ranks/--gpus, the driver of a fleet
// whose workers are this same executable).
#include "common/generation_app.h"
#include "runtime/worker.h"

int main(int argc, char** argv) {
  if (auto rc = ltx2::runtime::run_worker_if_requested(argc, argv)) return *rc;
  return ltx2::cli::run_generation_program(argc, argv, ltx2::PipelineKind::Hq, "ltx2-ti2vid-hq");
}
