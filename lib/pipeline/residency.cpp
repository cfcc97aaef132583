// The residency plan (see residency.h).
#include "pipeline/residency.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/cuda/memory.h"
#include "core/error.h"
#include "io/layout.h"
#include "io/lora.h"
#include "io/weights.h"
#include "models/text/gemma3.h"
#include "models/text/tokenizer.h"
#include "models/video_vae/decoder_kind.h"
#include "pipeline/latent_tools.h"
#include "pipeline/pipeline_models.h"

namespace ltx2::pipeline {

namespace {

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

double gib(uint64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(kGiB);
}

size_t index_of(ModelPart p) {
  return static_cast<size_t>(p);
}

// Bytes the tensors of `set` in `components` take once loaded in `dtype` (floating tensors are
// converted; others keep their stored size).
uint64_t device_bytes(const WeightSet& set, const std::vector<Component>& components, DType dtype) {
  uint64_t total = 0;
  for (const auto& file : set.files())
    for (const TensorInfo& t : file->tensors()) {
      if (std::find(components.begin(), components.end(), classify_key(t.name)) == components.end()) continue;
      const uint64_t stored = t.end - t.begin;
      total += dtype_is_floating(t.dtype) ? stored / dtype_size(t.dtype) * dtype_size(dtype) : stored;
    }
  return total;
}

// The transformer weights the LoRA files adapt (module names as lib/io/lora.h renames them), in
// bytes on the device: fusing makes a copy of each while the clean one is kept for restoring, plus
// the fusing's temporaries.
uint64_t lora_target_bytes(const WeightSet& ltx, const std::vector<std::string>& lora_files, DType dtype) {
  constexpr std::string_view kDown = ".lora_A.weight";
  std::vector<std::string> modules;
  for (const std::string& path : lora_files) {
    const auto lora = WeightSet::open({path});  // held: the loop below reads into it
    for (const auto& file : lora->files())
      for (const TensorInfo& t : file->tensors())
        if (t.name.size() > kDown.size() &&
            t.name.compare(t.name.size() - kDown.size(), kDown.size(), kDown) == 0)
          modules.push_back(lora_renamed_key(t.name.substr(0, t.name.size() - kDown.size())));
  }
  std::sort(modules.begin(), modules.end());
  modules.erase(std::unique(modules.begin(), modules.end()), modules.end());
  uint64_t bytes = 0, largest = 0;
  for (const std::string& module : modules)
    for (const std::string& prefix : component_prefixes(Component::Transformer))
      if (ltx.contains(prefix + module + ".weight")) {
        const auto n = static_cast<uint64_t>(shape_numel(ltx.info(prefix + module + ".weight").shape));
        bytes += n * dtype_size(dtype);
        largest = std::max(largest, n);
        break;
      }
  // Fusing one weight holds float32 temporaries of it (the delta and the sum): on the H200 the 19B
  // stage 2 with its rank-384 LoRA peaked at 78.1 GiB allocated, 0.4 GiB above the estimate
  // without this term.
  return bytes + 2 * largest * sizeof(float);
}

// Gemma's activations for `prompts` prompts of kGemmaTokenizerMaxLength tokens: every layer's
// hidden state is kept for the feature extractor (49 of 3840 x 1024 in bf16 for Gemma 3 12B, about
// 0.4 GiB a prompt), the rest is one layer's working set; measured ~1.1 GiB for two prompts.
uint64_t text_activation_bytes(int prompts) {
  return 1 * kGiB + static_cast<uint64_t>(prompts) * 768 * kMiB;
}

}  // namespace

const char* model_part_name(ModelPart part) {
  switch (part) {
    case ModelPart::Text: return "text encoder";
    case ModelPart::Transformer: return "transformer";
    case ModelPart::VideoEncoder: return "video encoder";
    case ModelPart::Upsampler: return "upsampler";
    case ModelPart::VideoDecoder: return "video decoder";
    case ModelPart::Audio: return "audio decoder + vocoder";
  }
  return "?";
}

RequestShape request_shape(const GenerationRequest& r, PipelineKind kind) {
  const PipelineTraits& t = pipeline_traits(kind);
  // (--num-frames unset: the longest video the duration head may ask for.)
  return {r.height,          r.width,         max_num_frames(r),
          !r.images.empty(), t.guided,        t.guided ? r.max_batch_size : 1,
          t.refines,         t.lora_in_stage1};
}

// From the H200 (docs/performance.md, "End to end"): the 19B forward alone takes ~0.165 MiB of
// activations per video token (4.0 GiB at 24,576 tokens in `ltx2 bench transformer`); in the
// pipeline the stage's states, predictions and the allocator's rounding come on top, so the
// estimate allows 0.25 MiB a token.
uint64_t transformer_activation_bytes(int64_t video_tokens, int64_t text_tokens) {
  return static_cast<uint64_t>(video_tokens) * 256 * 1024 + static_cast<uint64_t>(text_tokens) * 64 * 1024 +
         512 * kMiB;
}

// The automatic tiling bounds each tile's working set (~4 GiB); what grows with the video is the
// blended output and the 8-bit frames on their way out, allowed 40 bytes a pixel.
uint64_t decode_activation_bytes(int height, int width, int num_frames) {
  const auto pixels =
      static_cast<uint64_t>(height) * static_cast<uint64_t>(width) * static_cast<uint64_t>(num_frames);
  return 4 * kGiB + 256 * kMiB + pixels * 40;
}

uint64_t diffusion_decode_activation_bytes(const DiffusionVideoDecoderConfig& c, int height, int width,
                                           int num_frames, DType dtype) {
  const auto e = static_cast<uint64_t>(dtype_size(dtype));
  // Latent cells (at least the decoder's size floor), then the stage-4 input grid.
  const Dims3 floor = c.min_latent_size();
  const Dims3 cells = {std::max<int64_t>((num_frames - 1) / 8 + 1, floor[0]),
                       std::max<int64_t>(height / 32, floor[1]), std::max<int64_t>(width / 32, floor[2])};
  const Dims3 s4 = c.stage4_cells({cells[0] + c.trailing_pad_latent_frames(), cells[1], cells[2]});
  const auto s4_bytes = static_cast<uint64_t>(s4[0] * s4[1] * s4[2] * c.stage_channels[3]) * e;
  const auto pixels = static_cast<uint64_t>((cells[0] - 1) * 8 + 1) * static_cast<uint64_t>(cells[1] * 32) *
                      static_cast<uint64_t>(cells[2] * 32);
  const uint64_t tokens = pixels / static_cast<uint64_t>(c.patch_size * c.patch_size);
  const uint64_t stage5 = tokens * static_cast<uint64_t>(c.diffusion_channels()) * e * 5;
  const uint64_t pixel_tensors = pixels * static_cast<uint64_t>(c.out_channels) * (4 * sizeof(float) + e);
  return s4_bytes + stage5 + pixel_tensors + 1 * kGiB;
}

uint64_t ResidencyPlan::phase_peak(const PhaseMemory& phase) const {
  uint64_t bytes = phase.activation_bytes;
  for (ModelPart p : kModelParts) {
    const bool used = std::find(phase.parts.begin(), phase.parts.end(), p) != phase.parts.end();
    if (keeps(p) || used) bytes += weights(p);
  }
  return bytes;
}

const PhaseMemory& ResidencyPlan::peak_phase() const {
  LTX2_CHECK(!phases.empty(), "residency plan without phases");
  return *std::max_element(phases.begin(), phases.end(), [&](const PhaseMemory& a, const PhaseMemory& b) {
    return phase_peak(a) < phase_peak(b);
  });
}

std::string ResidencyPlan::describe() const {
  std::string kept, per_phase;
  for (ModelPart p : kModelParts) {
    if (weights(p) == 0) continue;
    std::string& list = keeps(p) ? kept : per_phase;
    list += fmt::format("{}{} {:.1f}", list.empty() ? "" : ", ", model_part_name(p), gib(weights(p)));
  }
  const PhaseMemory& peak = peak_phase();
  return fmt::format(
      "{}, budget {:.1f} GiB: resident {} GiB; loaded per phase: {}; estimated peak {:.1f} GiB in {}",
      device.str(), gib(budget_bytes), kept.empty() ? "none" : kept,
      per_phase.empty() ? "none" : per_phase + " GiB", gib(phase_peak(peak)), peak.phase);
}

ModelMemory model_memory(const ModelPaths& paths, const PipelineOptions& options) {
  ModelMemory m;
  m.device = options.device;
  const DType vae = options.vae_dtype.value_or(options.device.is_cuda() ? DType::BF16 : DType::F32);
  const DType text = options.text_encoder_on_device ? options.transformer_dtype : DType::F32;
  const ModelWeightSets sets = open_model_weights(paths);
  const auto& ltx = sets.ltx;
  const auto& video_vae = sets.video_vae;
  auto& w = m.weight_bytes;
  // User LoRAs are fused at load (a fused copy of each adapted weight beside the clean one); a
  // two-stage stage 2 fuses the distilled LoRA on top, from the clean weights, for that stage only.
  std::vector<std::string> user_loras;
  for (const LoraFile& l : paths.loras) user_loras.push_back(l.path);
  std::vector<std::string> stage_loras = user_loras;
  for (const LoraFile& l : paths.distilled_loras) stage_loras.push_back(l.path);
  const DType dt = options.transformer_dtype;
  const uint64_t user_fused = user_loras.empty() ? 0 : lora_target_bytes(*ltx, user_loras, dt);
  m.stage2_lora_bytes = paths.distilled_loras.empty() ? 0 : lora_target_bytes(*ltx, stage_loras, dt);
  w[index_of(ModelPart::Transformer)] = device_bytes(*ltx, {Component::Transformer}, dt) + user_fused;
  // On the CPU the text encoder's memory is host memory: it takes nothing on the device.
  if (options.load_text_encoder && (options.text_encoder_on_device || !options.device.is_cuda()))
    w[index_of(ModelPart::Text)] =
        device_bytes(*Gemma3TextModel::locate(paths.gemma_source()).weights, {Component::TextModel}, text) +
        device_bytes(*ltx, {Component::TextConnector}, text);
  w[index_of(ModelPart::VideoEncoder)] =
      device_bytes(*video_vae, {Component::VideoEncoder, Component::VideoStats}, vae);
  // Either decoder's tensors (the diffusion decoder's static gates fold into its linears at load:
  // counted as stored) and the statistics it un-normalizes with.
  w[index_of(ModelPart::VideoDecoder)] =
      device_bytes(*video_vae, {Component::VideoDecoder, Component::VideoStats}, vae);
  if (video_vae::video_decoder_kind(*video_vae) == video_vae::VideoDecoderKind::Diffusion)
    m.diffusion_decoder = DiffusionVideoDecoderConfig::from_metadata(video_vae->config());
  m.vae_dtype = vae;
  if (!paths.spatial_upsampler.empty())  // the one-stage pipeline has none
    w[index_of(ModelPart::Upsampler)] =
        device_bytes(*WeightSet::open({paths.spatial_upsampler}), {Component::LatentUpsampler}, vae);
  w[index_of(ModelPart::Audio)] =
      device_bytes(*sets.audio, {Component::AudioDecoder, Component::AudioStats, Component::Vocoder}, vae);
  return m;
}

ResidencyPlan plan_residency(const ModelPaths& paths, const PipelineOptions& options,
                             const std::vector<RequestShape>& shapes, uint64_t budget_bytes) {
  return plan_residency(model_memory(paths, options), shapes, budget_bytes);
}

ResidencyPlan plan_residency(const ModelMemory& memory, const std::vector<RequestShape>& shapes,
                             uint64_t budget_bytes) {
  LTX2_CHECK(!shapes.empty(), "residency plan: no request to plan for");
  ResidencyPlan plan;
  plan.device = memory.device;
  plan.budget_bytes = budget_bytes;
  plan.weight_bytes = memory.weight_bytes;
  const uint64_t stage_fused = memory.stage2_lora_bytes;

  // Each phase's activations for the largest request.
  uint64_t text_act = 0, s1 = 0, s2 = 0, decode = 0;
  bool images = false, refines = false, lora_in_stage1 = false;
  for (const RequestShape& r : shapes) {
    const int scale = r.refines ? 2 : 1;
    const auto g1 = video_latent_grid(r.num_frames, r.height / scale, r.width / scale);
    const auto g2 = video_latent_grid(r.num_frames, r.height, r.width);
    text_act = std::max(text_act, text_activation_bytes(r.guided ? 2 : 1));
    s1 = std::max(s1, transformer_activation_bytes(int64_t{r.stage1_batch} * g1[0] * g1[1] * g1[2],
                                                   int64_t{r.stage1_batch} * kGemmaTokenizerMaxLength));
    s2 = std::max(s2, transformer_activation_bytes(g2[0] * g2[1] * g2[2], kGemmaTokenizerMaxLength));
    decode = std::max(decode, memory.diffusion_decoder
                                  ? diffusion_decode_activation_bytes(*memory.diffusion_decoder, r.height,
                                                                      r.width, r.num_frames, memory.vae_dtype)
                                  : decode_activation_bytes(r.height, r.width, r.num_frames));
    images = images || r.images;
    refines = refines || r.refines;
    lora_in_stage1 = lora_in_stage1 || r.lora_in_stage1;
  }
  std::vector<ModelPart> stage = {ModelPart::Transformer};
  if (images) stage.push_back(ModelPart::VideoEncoder);
  // The upsampler un-normalises with the video encoder's statistics.
  plan.phases = {{"text encode", {ModelPart::Text}, text_act},
                 {"stage 1", stage, s1 + (lora_in_stage1 ? stage_fused : 0)}};
  if (refines) {
    plan.phases.push_back({"upsample", {ModelPart::Upsampler, ModelPart::VideoEncoder}, 1 * kGiB});
    plan.phases.push_back({"stage 2", stage, s2 + stage_fused});
  }
  plan.phases.push_back({"decode", {ModelPart::VideoDecoder}, decode});
  plan.phases.push_back({"audio", {ModelPart::Audio}, 1 * kGiB});

  plan.resident.fill(true);
  // The transformer serves both stages with its LoRAs fused and the encoder's statistics serve the
  // upsampler: those stay. The others become per-phase, largest first, while a phase is over.
  const std::vector<ModelPart> evictable = {ModelPart::Text, ModelPart::Upsampler, ModelPart::VideoDecoder,
                                            ModelPart::Audio};
  for (;;) {
    const PhaseMemory& peak = plan.peak_phase();
    if (plan.phase_peak(peak) <= budget_bytes) break;
    ModelPart victim = ModelPart::Transformer;
    uint64_t largest = 0;
    for (ModelPart p : evictable) {
      const bool used = std::find(peak.parts.begin(), peak.parts.end(), p) != peak.parts.end();
      if (plan.keeps(p) && !used && plan.weights(p) > largest) {
        victim = p;
        largest = plan.weights(p);
      }
    }
    if (victim == ModelPart::Transformer) {
      uint64_t weights = 0;
      for (ModelPart p : kModelParts)
        if (plan.keeps(p) || std::find(peak.parts.begin(), peak.parts.end(), p) != peak.parts.end())
          weights += plan.weights(p);
      LTX2_FAIL("{} needs {:.1f} GiB on {} (weights {:.1f}, activations {:.1f}) but {:.1f} GiB are available",
                peak.phase, gib(plan.phase_peak(peak)), memory.device.str(), gib(weights),
                gib(peak.activation_bytes), gib(budget_bytes));
    }
    plan.resident[index_of(victim)] = false;
  }
  return plan;
}

uint64_t device_memory_budget(Device device, double cap_gib) {
  LTX2_CHECK(device.is_cuda(), "a memory budget is a GPU's, not {}'s", device.str());
  LTX2_CHECK(cap_gib >= 0, "--gpu-memory must not be negative, got {}", cap_gib);
  // cuBLASLt's workspace, cuDNN's handle and NCCL's buffers come from outside the caching allocator.
  constexpr uint64_t kLibraryReserve = 1 * kGiB;
  const CudaDeviceMemory m = cuda_device_memory(device.index);
  const uint64_t held = m.total - m.free;  // the context and whatever else holds memory already
  uint64_t budget = m.free > kLibraryReserve ? m.free - kLibraryReserve : 0;
  if (cap_gib > 0) {
    const auto cap = static_cast<uint64_t>(cap_gib * static_cast<double>(kGiB));
    LTX2_CHECK(cap > held + kLibraryReserve, "--gpu-memory {} GiB: {} already holds {:.1f} GiB", cap_gib,
               device.str(), gib(held));
    budget = std::min(budget, cap - held - kLibraryReserve);
    cuda_set_memory_limit(device.index, budget);
  }
  return budget;
}

uint64_t device_bytes_available(Device device) {
  LTX2_CHECK(device.is_cuda(), "free memory is a GPU's, not {}'s", device.str());
  const CudaMemoryStats s = cuda_memory_stats(device.index);
  const uint64_t bytes = cuda_device_memory(device.index).free + (s.reserved - s.allocated);
  if (s.limit == 0) return bytes;
  return std::min<uint64_t>(bytes, s.limit > s.allocated ? s.limit - s.allocated : 0);
}

nlohmann::json to_json(const std::vector<RequestShape>& shapes) {
  nlohmann::json out = nlohmann::json::array();
  for (const RequestShape& r : shapes)
    out.push_back(
        {r.height, r.width, r.num_frames, r.images, r.guided, r.stage1_batch, r.refines, r.lora_in_stage1});
  return out;
}

std::vector<RequestShape> request_shapes_from_json(const nlohmann::json& j) {
  std::vector<RequestShape> out;
  for (const nlohmann::json& r : j)
    out.push_back({r.at(0), r.at(1), r.at(2), r.at(3), r.at(4), r.at(5), r.at(6), r.at(7)});
  return out;
}

}  // namespace ltx2::pipeline
