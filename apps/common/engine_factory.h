// The one place the generation programs decide where a job runs and get an engine for it: the
// default-device rule (EnginePlacement), then an engine in this process or on a fleet of worker
// processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/generation_cli.h"
#include "core/device.h"
#include "pipeline/generation_engine.h"

namespace ltx2::cli {

// Where a job runs. The rule (first match):
//   --ranks N            a fleet of N CPU worker processes
//   --device cpu         the CPU, in this process
//   --gpus LIST          those GPUs
//   --device cuda[:N]    every visible GPU (or GPU N); an error when none is visible
//   (nothing)            every visible GPU when this build has CUDA, else the CPU
// GPUs: one runs in this process (unless --retries or --job-timeout asks for a worker that can be
// killed and restarted), several run as a fleet with one worker process each.
struct EnginePlacement {
  std::vector<Device> devices;  // one entry in process; the fleet's ranks otherwise
  bool fleet = false;
  std::string reason;  // why these devices ("no GPU visible", "--gpus", ...), for the first log line
  int nodes = 1;       // a job across nodes (runtime/nodes.h): `devices` on each, always a fleet

  bool on_gpu() const { return !devices.empty() && devices[0].is_cuda(); }
  // "cuda:0 in this process, bf16" / "4 GPUs (cuda:0-3), one worker process each, bf16" /
  // "the CPU in this process, float32 (no GPU visible)".
  std::string describe() const;
};

// The rule above over what the machine has (`cuda_built`, `visible_gpus`); throws ltx2::Error
// naming the flag at fault.
EnginePlacement plan_placement(const GenerationFlags& flags, bool cuda_built, int visible_gpus);
// The same for this binary on this machine (counts GPUs without initialising CUDA).
EnginePlacement plan_placement(const GenerationFlags& flags);

// Throws ltx2::Error (naming the flag) when the fleet flags (--ranks, --gpus, --*-tiles, ...) are
// malformed; called during validation, before any work.
void check_engine_available(const GenerationFlags& flags, const EnginePlacement& placement);

// The in-process engine's options for its device; on a GPU with the residency plan for `shapes`
// within --gpu-memory (pipeline/residency.h). Throws naming the phase that cannot fit, before any
// model is loaded.
pipeline::PipelineOptions local_engine_options(const EnginePlacement& placement, const ModelPaths& paths,
                                               const std::vector<pipeline::RequestShape>& shapes,
                                               double gpu_memory_gib);

// Loads the models (paths already validated) into the engine the placement says: in this process
// with `local_options`, or on a fleet whose ranks plan their memory for `shapes`.
std::unique_ptr<pipeline::GenerationEngine> make_engine(PipelineKind kind, const ModelPaths& paths,
                                                        const GenerationFlags& flags,
                                                        const EnginePlacement& placement,
                                                        pipeline::PipelineOptions local_options,
                                                        const std::vector<pipeline::RequestShape>& shapes);

}  // namespace ltx2::cli
