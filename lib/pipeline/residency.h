// The residency plan: which models a pipeline keeps on its GPU from job to job, and which it loads
// for the phase that uses them and releases after (the reference builds and frees every model per
// stage; we keep whatever fits, so a --jobs file pays no load after its first job).
//
// Decided once, before anything is loaded, from the model files' headers (the bytes each model
// takes on the device in its dtype) and the largest request the engine will run (the activations of
// each phase, estimated from the request's token and pixel counts):
//   peak(phase) = resident weights + weights loaded for this phase only + the phase's activations
// (stage 2 of the two-stage pipeline counts the fused copies of the weights its distilled LoRA
// adapts among its activations: they exist for that stage only, beside the clean weights)
// Every model starts resident; while the largest peak exceeds the budget the largest evictable
// resident model (never the transformer: it serves both stages and carries the fused LoRAs) is made
// per-phase. If the peak still exceeds the budget the job cannot run there, and plan_residency
// throws naming the phase and the GiB it needs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "io/configs/diffusion_video_decoder_config.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

enum class ModelPart { Text, Transformer, VideoEncoder, Upsampler, VideoDecoder, Audio };
inline constexpr std::array<ModelPart, 6> kModelParts = {ModelPart::Text,         ModelPart::Transformer,
                                                         ModelPart::VideoEncoder, ModelPart::Upsampler,
                                                         ModelPart::VideoDecoder, ModelPart::Audio};
// "text encoder (Gemma + connectors)", "transformer", ...
const char* model_part_name(ModelPart part);

// The size of a request as far as memory goes.
struct RequestShape {
  int height = 0, width = 0, num_frames = 0;
  bool images = false;          // the video encoder runs (image conditioning)
  bool guided = false;          // a negative prompt goes through the text encoder too
  int stage1_batch = 1;         // samples per stage-1 transformer call (guided: --max-batch-size)
  bool refines = true;          // stage 1 at half size, then upsample and stage 2 (else stage 1 at full size)
  bool lora_in_stage1 = false;  // stage 1 fuses the distilled LoRA too (HQ)
};
RequestShape request_shape(const GenerationRequest& r, PipelineKind kind);

struct PhaseMemory {
  std::string phase;              // "text encode", "stage 1", "upsample", "stage 2", "decode", "audio"
  std::vector<ModelPart> parts;   // the models the phase runs
  uint64_t activation_bytes = 0;  // estimated, for the largest request
};

struct ResidencyPlan {
  Device device;
  uint64_t budget_bytes = 0;               // what the models and activations may take
  std::array<uint64_t, 6> weight_bytes{};  // per ModelPart, on the device in its dtype
  std::array<bool, 6> resident{};          // per ModelPart: loaded once and kept
  std::vector<PhaseMemory> phases;

  bool keeps(ModelPart p) const { return resident[static_cast<size_t>(p)]; }
  uint64_t weights(ModelPart p) const { return weight_bytes[static_cast<size_t>(p)]; }
  // The estimated peak of one phase under this plan.
  uint64_t phase_peak(const PhaseMemory& phase) const;
  // The largest phase peak and its phase.
  const PhaseMemory& peak_phase() const;
  // One line: "cuda:0, budget 78.5 GiB: resident transformer 35.2, ... GiB; per phase: text
  // encoder 22.1 GiB; peak 61.0 GiB in stage 2".
  std::string describe() const;
};

// What the models take on the device, read off the files' headers (no tensor is read): per
// ModelPart in the dtype `options` places it in, and the copies (and temporaries) that fusing the
// stage-2 LoRAs adds for that stage. The paths are validated already.
struct PipelineOptions;
struct ModelMemory {
  Device device;
  std::array<uint64_t, 6> weight_bytes{};  // per ModelPart
  uint64_t stage2_lora_bytes = 0;
  // Set when the video VAE's decoder is LTX-2.5's diffusion decoder (its weights are VideoDecoder's
  // bytes all the same): the decode phase's activations are then its whole-video decode's.
  std::optional<DiffusionVideoDecoderConfig> diffusion_decoder;
  DType vae_dtype = DType::F32;
};
ModelMemory model_memory(const ModelPaths& paths, const PipelineOptions& options);

// Plans for `shapes` (the requests the engine will run; the largest per phase counts) with
// `budget_bytes`; no I/O, so a caller can try each request of a batch against one ModelMemory.
// Throws ltx2::Error when a phase cannot fit even with every other model released:
// "stage 2 needs 84.3 GiB on cuda:0 (weights 38.2, activations 46.1) but 78.5 GiB are available".
ResidencyPlan plan_residency(const ModelMemory& memory, const std::vector<RequestShape>& shapes,
                             uint64_t budget_bytes);
// model_memory + plan_residency.
ResidencyPlan plan_residency(const ModelPaths& paths, const PipelineOptions& options,
                             const std::vector<RequestShape>& shapes, uint64_t budget_bytes);

// The bytes models and activations may take on the GPU `device`: what the driver reports free
// now, less a reserve for the CUDA libraries' own allocations. With `cap_gib` > 0 the process uses at
// most that much of the device in all, and the caching allocator is capped to match, so a smaller
// GPU (80 GiB, H100-class) can be stood in for on a larger one.
uint64_t device_memory_budget(Device device, double cap_gib);

// The bytes new allocations on the GPU `device` can take now: the driver's free memory and the
// caching allocator's cached blocks, within the allocator's cap (--gpu-memory) when it has one.
uint64_t device_bytes_available(Device device);

// JSON round trip of the planned shapes (a fleet's setup carries them to its ranks).
nlohmann::json to_json(const std::vector<RequestShape>& shapes);
std::vector<RequestShape> request_shapes_from_json(const nlohmann::json& j);

// Activation estimates (bytes) per phase for one request in `dtype` on a GPU, from measured peaks of
// the phases on an H200 (docs/performance.md, "End to end") with a margin; exposed for tests.
uint64_t transformer_activation_bytes(int64_t video_tokens, int64_t text_tokens);
uint64_t decode_activation_bytes(int height, int width, int num_frames);
// The diffusion decoder's whole-video decode in `dtype`: the reference's own estimate of a decode
// tile (diffusion_tiling.recommended_decode_tiling_config: the stage-4 input features, the output
// pixels, the diffusion stage's tokens x width x 5 for its chunked eager attention) over the whole
// video, plus this engine's float32 pixel tensors of the sampling loop (noise, x_t, the prediction,
// the Euler step's temporaries) and 1 GiB for the attention's query tiles.
uint64_t diffusion_decode_activation_bytes(const DiffusionVideoDecoderConfig& config, int height, int width,
                                           int num_frames, DType dtype);

}  // namespace ltx2::pipeline
