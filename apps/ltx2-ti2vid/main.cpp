// `ltx2-ti2vid`: the two-stage text/image-to-video pipeline (guided stage 1, distilled-LoRA
// stage 2), one process (or, with --ranks/--gpus, the driver of a fleet whose workers are this
// same executable).
#include "common/generation_app.h"
#include "runtime/worker.h"

int main(int argc, char** argv) {
  if (auto rc = ltx2::runtime::run_worker_if_requested(argc, argv)) return *rc;
  return ltx2::cli::run_generation_program(argc, argv, ltx2::PipelineKind::TwoStage, "ltx2-ti2vid");
}
