// The fleet engine: a GenerationEngine whose pipeline runs on a fleet of worker processes (one per
// CPU rank or GPU), the driver (this process) loading no model.
//
// Every rank loads the models once (runner setup) and runs each request in SPMD lockstep:
// - transformer calls run sequence parallel over all ranks (the stages' executors,
//   pipeline/stage_executors.h);
//   the stage 2 the distilled LoRA refines (ti2vid, HQ, keyframes) runs tiled data parallel instead
//   when stage2_parallel is TiledData, as the reference's runners do (multigpu.md 4: tiles
//   round-robin over the ranks, one SUM all-reduce, stage-2 sigmas [0.625, 0.4, 0.0]); ti2vid and
//   HQ decode stage 1's audio, which ran sequence parallel; keyframes decodes stage 2's, under TDP
//   the mean of the tiles' (the reference has no multi-GPU keyframe runner);
// - the video decode is distributed (parallel/distributed_decode.h, multigpu.md 5; its tiles travel
//   as runtime/decode_stream.h says): rank r decodes
//   tiles r, r + W, ... of the pipeline's own tile plan (the single-process decode's; or, asked
//   for, the reference's plan, parallel/vae_tile_plan.h) and streams them to the driver in pieces
//   of at most tile_piece_bytes (whole frames, or bands of rows of one frame when a frame is
//   larger), so no frame size is too large for the result rings. Tiles travel as the decoder's
//   values in its dtype (bf16 on a GPU, exact), because the blend needs them: 8-bit tiles blended
//   would differ from a float blend by up to a code value. The driver blends the pipeline plan's
//   tiles with the pipeline's blender in plan order, so every pixel is the sum the in-process
//   decode forms, and the reference plan's with the same blender in the reference's assembly
//   order, each tile mapped to [0, 1] first as the reference maps its tiles; it hands frames out in
//   time order as soon as the blender has them. A plan of one tile, or one rank, is the finished video: rank
//   0 decodes it as the in-process engine does (the pipeline's tiling, blended on the device; the reference's
//   runners decode a one-tile plan untiled) and streams each run of finished frames as 8-bit RGB
//   made on its device;
// - rank 0 streams progress and the waveform.
// Every rank draws the same full noise tensors (Philox keyed by seed and draw index), so results do
// not depend on the rank count beyond floating-point order. A fatal fleet failure (a rank that
// dies, stops beating or makes no progress, a request past job_timeout: controller.h) restarts the
// fleet and retries the request up to `retries` times; what the caller already received is not
// repeated (the rerun is deterministic, so the engine skips that many frames / progress events).
//
// Executables that create a fleet engine must call runtime::run_worker_if_requested first thing
// in main() (worker.h): the workers are that same executable re-run with --worker.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "io/quantization.h"
#include "pipeline/generation_engine.h"
#include "pipeline/residency.h"
#include "runtime/rank_settings.h"

namespace ltx2::runtime {

// The default job timeout: an hour, some 70 times the longest full-size job measured on one H200
// (ti2vid, 30 steps, 1024x1536x121: 53 s, docs/performance.md) and room for slower GPUs and
// per-phase model loads; a full-size model on CPU ranks needs more (--job-timeout).
inline constexpr std::chrono::hours kDefaultJobTimeout{1};

// The fleet itself (processes, devices, timeouts) and what its ranks are set up with.
struct FleetEngineOptions : RankSettings {
  int ranks = 1;                        // CPU worker processes (used when gpus is empty)
  std::vector<int> gpus;                // CUDA device indices, one worker each
  int retries = 0;                      // fleet restarts per request after a fatal failure
  std::chrono::milliseconds ready_timeout{std::chrono::minutes(30)};
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(30)};
  // A request running longer fails (FleetBroken naming it; retried first with `retries`).
  std::chrono::milliseconds job_timeout{kDefaultJobTimeout};
  // The longest a rank may go without a step, phase or result (controller.h: Liveness); unset:
  // default_progress_timeout(job_timeout).
  std::optional<std::chrono::milliseconds> progress_timeout;
  std::string shm_prefix = "ltx2-fleet";
};

// One device per rank: cuda:g for each of gpus, else `ranks` CPU devices, on each node of a job
// across nodes (nodes.h; node k's ranks follow node k - 1's). Refuses ranks < 1,
// more than 64 ranks, a negative GPU index, negative tile counts or overlaps and a
// tile_piece_bytes outside its range.
std::vector<Device> fleet_devices(const FleetEngineOptions& opt);

// Validates the model paths (files only; nothing is loaded here), starts the fleet and waits
// until every rank has loaded the models. Throws ltx2::Error naming the rank that failed.
std::unique_ptr<pipeline::GenerationEngine> make_fleet_engine(PipelineKind kind, const ModelPaths& paths,
                                                              const FleetEngineOptions& opt);

}  // namespace ltx2::runtime
