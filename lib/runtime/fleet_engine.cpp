// The fleet engine: the pipeline runners every rank executes ("pipeline.distilled",
// "pipeline.two_stage") and the driver-side engine that turns their streamed results into
// PipelineCallbacks calls (see fleet_engine.h).
//
// Results a job streams (runner -> driver):
//   "progress"   rank 0, {stage, step, steps}
//   "video_plan" rank 0 (none for a request without video: a .wav), how the decoded video
//                arrives: {plan: "frames", frames, height, width} (rank 0 streams the final
//                frames as tile 0), {plan: "tiles", latent_shape,
//                out_channels, config: [[tile_size, overlap] x 3], factors} (the pipeline's tile
//                plan, which the driver rebuilds with plan_tiled_decode) or {plan: "grid", grid:
//                latent (F, H, W), scale: (time, height, width), tiling: [[tiles, overlap] x 3]}
//                (the reference's plan; the driver rebuilds it with plan_vae_tiles)
//   "video_tile" any rank, {tile, frames, frame_start, row_start} + "pixels" [n, rows, W_t, 3]:
//                rows [row_start, row_start + rows) of frames [frame_start, frame_start + n) of a
//                tile of `frames` frames, in order: whole frames (row_start 0, rows H_t) or, when
//                a frame is larger than the piece bound, bands of rows of one frame (n = 1). uint8
//                RGB for the "frames" plan (final frames, as the decode finishes them), else the
//                decoder's [-1, 1] values in its dtype (f32 or bf16), channels last
//   "audio"      rank 0, {sample_rate} + "waveform" [2, N] (none for a request without audio)
#include "runtime/fleet_engine.h"

#include <array>
#include <map>

#include "core/error.h"
#include "core/log.h"
#include "models/video_vae/tiled_decode.h"
#include "ops/rgb8.h"
#include "ops/shape.h"
#include "parallel/sequence_parallel.h"
#include "parallel/tdp.h"
#include "parallel/vae_tile_plan.h"
#include "pipeline/latent_tools.h"
#include "pipeline/pipeline_models.h"
#include "runtime/controller.h"
#include "runtime/launcher.h"
#include "runtime/runner.h"
#include "tiling/tile_blender.h"

namespace ltx2::runtime {

namespace {

namespace tr = models::transformer;
using nlohmann::json;

constexpr const char* kDistilledRunner = "pipeline.distilled";
constexpr const char* kTwoStageRunner = "pipeline.two_stage";
constexpr size_t kMinTilePieceBytes = 1 << 10;

// The distributed decode tiling: frames untiled, height and width split in `tiles` (0: the
// reference's balanced_tile_split(world), multigpu.md 5.3) with `overlap` latent cells, each
// clamped so the split is legal on this grid (at most one tile per cell, overlap <= extent - tiles).
tiling::GridTiling vae_tiling(const tiling::GridExtent& grid, int world, std::array<int64_t, 2> tiles,
                              int64_t overlap) {
  auto [small, large] = tiling::balanced_tile_split(world);
  if (tiles[0] > 0) small = tiles[0];
  if (tiles[1] > 0) large = tiles[1];
  const auto axis = [&](int64_t extent, int64_t tiles) {
    tiles = std::min(tiles, extent);
    return tiling::AxisTiling::by_count(tiles, tiles > 1 ? std::min(overlap, extent - tiles) : 0);
  };
  return {tiling::AxisTiling::by_count(1, 0), axis(grid[1], small), axis(grid[2], large)};
}

// The pipeline's decode plan as the "video_plan" result carries it: what it was made from.
json pipeline_plan_json(const video_vae::DecodeTilePlan& plan) {
  json config = json::array();
  for (const tiling::AxisTiling& a : {plan.config.frames, plan.config.height, plan.config.width})
    config.push_back({a.value, a.overlap});
  return {{"plan", "tiles"},
          {"latent_shape", plan.latent_shape},
          {"out_channels", plan.video_shape[1]},
          {"config", config},
          {"factors", {plan.factors.time, plan.factors.height, plan.factors.width}}};
}

video_vae::DecodeTilePlan pipeline_plan_from_json(const json& j) {
  const auto axis = [&](size_t i) {
    return tiling::AxisTiling::by_size(j.at("config").at(i).at(0), j.at("config").at(i).at(1));
  };
  const json& f = j.at("factors");
  return video_vae::plan_tiled_decode(j.at("latent_shape").get<Shape>(), j.at("out_channels"),
                                      {axis(0), axis(1), axis(2)}, {f.at(0), f.at(1), f.at(2)});
}

// ---------------------------------------------------------------------------------------------
// Worker side.

class PipelineRunner final : public Runner {
 public:
  explicit PipelineRunner(PipelineKind kind) : kind_(kind) {}

  void setup(const json& config, const RunnerContext& ctx) override {
    ctx_ = ctx;
    stage2_tdp_ = kind_ == PipelineKind::TwoStage && config.at("stage2_parallel") == "tdp";
    const auto [small, large] = tiling::balanced_tile_split(ctx.world_size);
    const int64_t h = config.at("tdp_height_tiles"), w = config.at("tdp_width_tiles"),
                  overlap = config.at("tdp_overlap");
    vae_overlap_ = config.at("vae_overlap");
    tile_piece_bytes_ = config.at("tile_piece_bytes");
    vae_tiles_ = {config.at("vae_height_tiles"), config.at("vae_width_tiles")};
    vae_rank_split_ = config.at("vae_rank_split");
    tdp_tiling_ = {tiling::AxisTiling::by_count(1, 0),
                   tiling::AxisTiling::by_count(h > 0 ? h : small, overlap),
                   tiling::AxisTiling::by_count(w > 0 ? w : large, overlap)};
    pipeline::PipelineOptions options = pipeline::PipelineOptions::on_device(ctx.device);
    options.quantization = parse_quantization(config.at("quantization"));
    if (ctx.world_size > 1) {  // Gemma on rank 0 only; the contexts are broadcast
      options.load_text_encoder = ctx.rank == 0;
      options.text_encode = [this](pipeline::PipelineModels& m, const std::vector<std::string>& prompts) {
        return encode_text(m, prompts);
      };
    }
    const ModelPaths paths = model_paths_from_json(config.at("paths"));
    const auto shapes = pipeline::request_shapes_from_json(config.at("plan_shapes"));
    if (ctx.device.is_cuda() && !shapes.empty())
      options.residency = pipeline::plan_residency(
          paths, options, shapes, pipeline::device_memory_budget(ctx.device, config.at("gpu_memory_gib")));
    if (stage2_tdp_ && ctx.world_size > 1) options.stage2_sigmas = {0.625f, 0.4f, 0.0f};
    options.transformer_forward = [this](const std::string& stage, const tr::Transformer& model,
                                         const tr::Modality* video, const tr::Modality* audio,
                                         const tr::BatchedPerturbations& perturbations) {
      return forward(stage, model, video, audio, perturbations);
    };
    options.video_decode = [this](const video_vae::VideoDecoder& decoder, const Tensor& latent,
                                  const Tensor& timestep, const video_vae::DecodeTilePlan& local_plan,
                                  const std::function<void(const Tensor&)>&) {
      decode(decoder, latent, timestep, local_plan);
    };
    engine_ = pipeline::make_local_engine(kind_, paths, std::move(options));
  }

  json run(const Job& job, ResultSink& out) override {
    const GenerationRequest request = request_from_json(job.params.at("request"));
    sink_ = &out;
    stage2_grid_ = pipeline::video_latent_grid(request.num_frames, request.height, request.width);
    pipeline::PipelineCallbacks callbacks;
    // Every rank marks each step and phase (the fleet's liveness check); rank 0 streams them too.
    callbacks.progress = [this, &out](const std::string& stage, int step, int steps) {
      if (ctx_.rank == 0) out.output("progress", {{"stage", stage}, {"step", step}, {"steps", steps}});
      out.mark_progress(fmt::format("{} {}/{}", stage, step + 1, steps));
    };
    if (ctx_.rank == 0) {
      callbacks.audio = [&out](const Tensor& waveform, int64_t sample_rate) {
        out.output("audio", {{"sample_rate", sample_rate}}, {{"waveform", waveform.to(Device::cpu())}});
      };
    }
    engine_->generate(request, callbacks);
    sink_ = nullptr;
    return json::object();
  }

 private:
  tr::TransformerOutput forward(const std::string& stage, const tr::Transformer& model,
                                const tr::Modality* video, const tr::Modality* audio,
                                const tr::BatchedPerturbations& perturbations) {
    if (ctx_.world_size == 1) return model.forward(video, audio, perturbations);
    if (stage2_tdp_ && stage == "stage2" && video != nullptr)
      return tdp_forward(model, *video, audio, perturbations);
    parallel::SequenceParallelTransformer sp(model.config(), model.weights(), *ctx_.comm);
    return sp.forward(video, audio, perturbations);
  }

  // Tiled data parallel (multigpu.md 4.4): this rank's tiles with the full model, blended, then one
  // SUM all-reduce of the video and audio partials together.
  tr::TransformerOutput tdp_forward(const tr::Transformer& model, const tr::Modality& video,
                                    const tr::Modality* audio,
                                    const tr::BatchedPerturbations& perturbations) {
    const parallel::TdpTilePlan plan(stage2_grid_, tdp_tiling_);
    parallel::TokenSequence seq;
    seq.latent = video.latent;
    seq.positions = video.positions;
    seq.keyframes_mask = video.keyframes_mask;
    seq.attention_mask = video.attention_mask;
    const int64_t T = video.latent.size(1);
    if (video.timesteps.dim() >= 2 && video.timesteps.size(1) == T) seq.timesteps = video.timesteps;
    const auto tile_model = [&](const parallel::TokenSequence& tile) {
      tr::Modality v = video;
      v.latent = tile.latent;
      v.positions = tile.positions;
      v.keyframes_mask = tile.keyframes_mask;
      v.attention_mask = tile.attention_mask;
      if (seq.timesteps.defined()) v.timesteps = tile.timesteps;
      tr::TransformerOutput o = model.forward(&v, audio, perturbations);
      return std::pair<Tensor, Tensor>(o.video, o.audio);
    };
    const Tensor audio_latent = audio != nullptr ? audio->latent : Tensor();
    const parallel::TdpPartial partial =
        parallel::tdp_rank_partial(plan, seq, audio_latent, ctx_.rank, ctx_.world_size, tile_model);
    const int64_t nv = partial.video.numel();
    std::vector<Tensor> parts = {partial.video.contiguous().view({nv})};
    if (partial.audio.defined()) parts.push_back(partial.audio.contiguous().view({partial.audio.numel()}));
    const Tensor sum = ctx_.comm->all_reduce_sum(parts.size() == 1 ? parts[0] : ops::cat(parts, 0));
    tr::TransformerOutput out;
    out.video = sum.narrow(0, 0, nv).contiguous().view(partial.video.shape());
    if (partial.audio.defined())
      out.audio = sum.narrow(0, nv, partial.audio.numel()).contiguous().view(partial.audio.shape());
    return out;
  }

  // The reference's Gemma placement (multigpu.md: Gemma on rank 0 + broadcast): rank 0 encodes, the
  // others receive each prompt's video and audio contexts, first their dtype and shape (4 numbers a
  // context), then the tensors, in that order on every rank. Only rank 0 holds Gemma.
  std::vector<EncodedPrompt> encode_text(pipeline::PipelineModels& m,
                                         const std::vector<std::string>& prompts) {
    const auto n = static_cast<int64_t>(prompts.size());
    std::vector<EncodedPrompt> out(prompts.size());
    std::vector<int64_t> header(static_cast<size_t>(n) * 8, 0);
    if (ctx_.rank == 0) {
      m.acquire(pipeline::ModelPart::Text);
      out = m.text->encode(prompts);
      m.release(pipeline::ModelPart::Text);
      for (int64_t i = 0; i < n; ++i)
        for (int c = 0; c < 2; ++c) {
          const Tensor& t = c == 0 ? out[i].video_context : out[i].audio_context;
          LTX2_CHECK(t.dim() == 3, "text context {} is not [B, T, C]", t.str());
          int64_t* h = &header[static_cast<size_t>((i * 2 + c) * 4)];
          h[0] = static_cast<int64_t>(t.dtype());
          for (int d = 0; d < 3; ++d) h[d + 1] = t.size(d);
        }
    }
    comm::Communicator& comm = *ctx_.comm;
    header = comm.broadcast(Tensor::from_vector_i64(header, {n * 8}).to(comm.device()), 0)
                 .to(Device::cpu())
                 .to_vector_i64();
    for (int64_t i = 0; i < n; ++i)
      for (int c = 0; c < 2; ++c) {
        const int64_t* h = &header[static_cast<size_t>((i * 2 + c) * 4)];
        Tensor& t = c == 0 ? out[i].video_context : out[i].audio_context;
        const Tensor send = ctx_.rank == 0
                                ? t.to(comm.device())
                                : Tensor::empty({h[1], h[2], h[3]}, static_cast<DType>(h[0]), comm.device());
        t = comm.broadcast(send, 0).to(m.options.text_encoder_on_device ? m.options.device : Device::cpu());
      }
    if (ctx_.rank != 0)
      for (EncodedPrompt& e : out)
        e.context_mask = Tensor::full({1, e.video_context.size(1)}, 1.0f, DType::I64);
    return out;
  }

  // Distributed decode. By default the pipeline's own plan `local_plan` (the single-process
  // decode's): its tiles, round-robin over the ranks, each decoded as the in-process decode decodes
  // it, and blended by the driver in plan order with the same blender, so the frames do not depend
  // on the rank count. Asked for, the reference's plan instead (multigpu.md 5.1: height x width
  // tiles by rank count or given), each tile decoded whole (no single-GPU tiling inside a tile, as
  // in the reference's runners, so the two-temporal-split guard has nothing to refuse) and blended
  // by the driver from the decoder's values. Either plan with one tile, and any plan on one rank,
  // is decoded by rank 0 as the in-process engine does (local_plan, blended on the device), each
  // run of finished frames leaving the device as 8-bit RGB while the next tiles decode. (The
  // reference's runners decode a one-tile plan untiled: about 3x the device time and memory of the
  // tiled decode at 1024x1536x121, and frames only at the end.)
  void decode(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
              const video_vae::DecodeTilePlan& local_plan) {
    LTX2_CHECK(sink_ != nullptr, "fleet decode outside a job");
    if (!vae_grid_requested()) {
      if (ctx_.world_size == 1 || local_plan.tiles.size() == 1)
        return decode_on_rank0(decoder, latent, timestep, local_plan);
      if (ctx_.rank == 0) sink_->output("video_plan", pipeline_plan_json(local_plan));
      for (int64_t i : tiling::tiles_for_rank(static_cast<int64_t>(local_plan.tiles.size()), ctx_.rank,
                                              ctx_.world_size)) {
        decode_tile(decoder, latent, timestep, i, local_plan.tiles[static_cast<size_t>(i)].in);
      }
      return;
    }
    const tiling::GridExtent grid = {latent.size(2), latent.size(3), latent.size(4)};
    const auto f = decoder.config().scale_factors();
    const tiling::GridTiling grid_tiling = vae_tiling(grid, ctx_.world_size, vae_tiles_, vae_overlap_);
    const tiling::TilePlan plan = parallel::plan_vae_tiles(grid, grid_tiling, {f.time, f.height, f.width});
    if (plan.tiles.size() == 1) return decode_on_rank0(decoder, latent, timestep, local_plan);
    if (ctx_.rank == 0) {
      json axes = json::array();
      for (const tiling::AxisTiling& a : grid_tiling) axes.push_back({a.value, a.overlap});
      sink_->output(
          "video_plan",
          {{"plan", "grid"}, {"grid", grid}, {"scale", {f.time, f.height, f.width}}, {"tiling", axes}});
    }
    for (int64_t i :
         tiling::tiles_for_rank(static_cast<int64_t>(plan.tiles.size()), ctx_.rank, ctx_.world_size)) {
      decode_tile(decoder, latent, timestep, i, plan.tiles[static_cast<size_t>(i)].in);
    }
  }

  bool vae_grid_requested() const { return vae_rank_split_ || vae_tiles_[0] > 0 || vae_tiles_[1] > 0; }

  // The whole video on rank 0, streamed as 8-bit frames as the tiled decode finishes them.
  void decode_on_rank0(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                       const video_vae::DecodeTilePlan& local_plan) {
    if (ctx_.rank != 0) return;
    const Shape& video = local_plan.video_shape;
    sink_->output("video_plan",
                  {{"plan", "frames"}, {"frames", video[2]}, {"height", video[3]}, {"width", video[4]}});
    int64_t done = 0;
    video_vae::tiled_decode(
        decoder, latent, local_plan,
        [&](const Tensor& chunk) {
          const Tensor frames = ops::decoded_to_rgb8(chunk.select(0, 0)).to(Device::cpu());
          stream_frames(0, video[2], done, frames);
          done += frames.size(0);
        },
        timestep);
  }

  // Decodes the latent box of the first batch item whole and streams the decoder's values,
  // channels last, in its dtype.
  void decode_tile(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                   int64_t tile, const std::array<tiling::Interval, 3>& box) {
    const auto& [f, h, w] = box;
    const Tensor piece =
        latent.slice(2, f.start, f.stop).slice(3, h.start, h.stop).slice(4, w.start, w.stop).contiguous();
    const Tensor decoded = decoder.decode(piece, timestep).select(0, 0);  // [3, F_t, H_t, W_t]
    const Tensor values = decoded.permute({1, 2, 3, 0}).contiguous().to(Device::cpu());
    stream_frames(tile, values.size(0), 0, values);
  }

  // Streams frames [first, first + n) of a decoded tile of tile_frames frames (pixels [n, H_t, W_t,
  // 3]) in pieces of at most tile_piece_bytes_: whole frames, else bands of at least one row of
  // one frame.
  void stream_frames(int64_t tile, int64_t tile_frames, int64_t first, const Tensor& pixels) {
    const int64_t frames = pixels.size(0), rows = pixels.size(1);
    if (frames == 0) return;
    const size_t row_bytes = pixels.nbytes() / static_cast<size_t>(frames * rows);
    const size_t frame_bytes = row_bytes * static_cast<size_t>(rows);
    const auto send = [&](int64_t frame, int64_t row, const Tensor& part) {
      sink_->output(
          "video_tile",
          {{"tile", tile}, {"frames", tile_frames}, {"frame_start", first + frame}, {"row_start", row}},
          {{"pixels", part}});
    };
    if (frame_bytes <= tile_piece_bytes_) {
      const auto step = static_cast<int64_t>(tile_piece_bytes_ / frame_bytes);
      for (int64_t start = 0; start < frames; start += step)
        send(start, 0, pixels.narrow(0, start, std::min(step, frames - start)));
      return;
    }
    const auto band = std::max<int64_t>(1, static_cast<int64_t>(tile_piece_bytes_ / row_bytes));
    for (int64_t frame = 0; frame < frames; ++frame)
      for (int64_t row = 0; row < rows; row += band)
        send(frame, row, pixels.narrow(0, frame, 1).narrow(1, row, std::min(band, rows - row)));
  }

  PipelineKind kind_;
  RunnerContext ctx_;
  bool stage2_tdp_ = false;
  std::array<int64_t, 2> vae_tiles_{};
  bool vae_rank_split_ = false;
  int64_t vae_overlap_ = 4;
  size_t tile_piece_bytes_ = 0;
  tiling::GridTiling tdp_tiling_{};
  tiling::GridExtent stage2_grid_{};
  std::unique_ptr<pipeline::GenerationEngine> engine_;
  ResultSink* sink_ = nullptr;
};

const bool registered_distilled = register_runner(
    kDistilledRunner, [] { return std::make_unique<PipelineRunner>(PipelineKind::Distilled); });
const bool registered_two_stage =
    register_runner(kTwoStageRunner, [] { return std::make_unique<PipelineRunner>(PipelineKind::TwoStage); });

// ---------------------------------------------------------------------------------------------
// Driver side.

// One request's streamed results turned into callbacks. After a retry the rerun repeats what the
// caller already has; `delivered_*` (kept across attempts) say how much of it to skip.
//
// The decoded video arrives in one of three ways, which rank 0's "video_plan" names: "frames" (rank
// 0 streams the final 8-bit frames as tile 0 of the whole video), "tiles" (the pipeline's tile plan:
// decoded tiles, blended here in plan order by the pipeline's own blender) or "grid" (the
// reference's plan: decoded tiles blended here in assembly order).
class ResultAssembler {
 public:
  // video: the request's frames, height and width, which the decode plan must produce; has_video
  // false: the request decodes no video (output_has_video), so no plan may come.
  ResultAssembler(const pipeline::PipelineCallbacks& cb, int world, std::array<int64_t, 3> video,
                  bool has_video)
      : cb_(cb), world_(world), video_(video), has_video_(has_video) {}

  void restart() {
    plan_ = DecodePlan::None;
    grid_plan_.reset();
    tile_plan_.reset();
    blender_.reset();
    order_.clear();
    tiles_.clear();
    boxes_.clear();
    next_tile_ = 0;
    next_frame_ = total_frames_ = 0;
    seen_progress_ = seen_frames_ = 0;
  }

  void on_output(const JobEvent& e) {
    if (e.name == "progress") {
      if (++seen_progress_ > delivered_progress_) {
        delivered_progress_ = seen_progress_;
        if (cb_.progress) cb_.progress(e.data.at("stage"), e.data.at("step"), e.data.at("steps"));
      }
    } else if (e.name == "video_plan") {
      LTX2_CHECK(has_video_, "fleet engine: a decode plan from rank {} for a request without video", e.rank);
      LTX2_CHECK(plan_ == DecodePlan::None, "fleet engine: a second decode plan from rank {}", e.rank);
      set_plan(e.data);
      feed();
    } else if (e.name == "video_tile") {
      add_piece(e);
      feed();
    } else if (e.name == "audio") {
      if (!audio_delivered_ && cb_.audio)
        cb_.audio(tensor_of(e, "waveform").clone(), e.data.at("sample_rate"));
      audio_delivered_ = true;
    } else {
      LTX2_FAIL("fleet engine: unknown result '{}' from rank {}", e.name, e.rank);
    }
  }

  void finish() const {
    if (!has_video_) return;
    LTX2_CHECK(plan_ != DecodePlan::None && next_frame_ == total_frames_,
               "fleet engine: the job ended with {} of {} frames assembled", next_frame_, total_frames_);
  }

 private:
  // A decoded tile as it arrives: the whole tile's buffer, filled in piece order.
  struct TileBuffer {
    Tensor pixels;                           // [F_t, H_t, W_t, 3]
    int64_t frames_done = 0, rows_done = 0;  // complete frames; rows of the next one
  };
  using Box = std::array<int64_t, 3>;  // a tile's pixel frames, height, width
  enum class DecodePlan { None, Frames, Tiles, Grid };

  // The plan comes from rank 0: what it would decode must be the request's video before anything
  // is sized by it.
  void check_video(int64_t frames, int64_t height, int64_t width) const {
    LTX2_CHECK(frames == video_[0] && height == video_[1] && width == video_[2],
               "fleet engine: rank 0's decode plan is for {}x{}x{} pixels (frames x height x width), the "
               "request for {}x{}x{}",
               frames, height, width, video_[0], video_[1], video_[2]);
  }

  void set_plan(const json& j) {
    const std::string kind = j.at("plan");
    if (kind == "frames") {
      check_video(j.at("frames"), j.at("height"), j.at("width"));
      plan_ = DecodePlan::Frames;
      boxes_ = {Box{j.at("frames"), j.at("height"), j.at("width")}};
      total_frames_ = boxes_[0][0];
    } else if (kind == "tiles") {
      const Shape latent = j.at("latent_shape");
      const json& f = j.at("factors");
      LTX2_CHECK(latent.size() == 5, "fleet engine: a decode plan's latent shape has {} axes", latent.size());
      check_video(1 + f.at(0).get<int64_t>() * (latent[2] - 1), latent[3] * f.at(1).get<int64_t>(),
                  latent[4] * f.at(2).get<int64_t>());
      plan_ = DecodePlan::Tiles;
      tile_plan_ = std::make_unique<video_vae::DecodeTilePlan>(pipeline_plan_from_json(j));
      blender_ = std::make_unique<tiling::TileBlender>(*tile_plan_, tile_plan_->video_shape[0],
                                                       tile_plan_->video_shape[1]);
      for (const tiling::Tile& t : tile_plan_->tiles)
        boxes_.push_back({t.out[0].length(), t.out[1].length(), t.out[2].length()});
      total_frames_ = tile_plan_->video_shape[2];
    } else if (kind == "grid") {
      plan_ = DecodePlan::Grid;
      tiling::GridTiling grid_tiling;
      for (size_t i = 0; i < 3; ++i)
        grid_tiling[i] = tiling::AxisTiling::by_count(j.at("tiling").at(i).at(0), j.at("tiling").at(i).at(1));
      const json& sc = j.at("scale");
      const auto grid = j.at("grid").get<tiling::GridExtent>();
      check_video(1 + sc.at(0).get<int64_t>() * (grid[0] - 1), grid[1] * sc.at(1).get<int64_t>(),
                  grid[2] * sc.at(2).get<int64_t>());
      grid_plan_ = std::make_unique<tiling::TilePlan>(
          parallel::plan_vae_tiles(grid, grid_tiling, {sc.at(0), sc.at(1), sc.at(2)}));
      blender_ = std::make_unique<tiling::TileBlender>(*grid_plan_, 1, 3);
      order_ = parallel::assembly_order(*grid_plan_, world_);
      for (const tiling::Tile& t : grid_plan_->tiles)
        boxes_.push_back({t.out[0].length(), t.out[1].length(), t.out[2].length()});
      total_frames_ = grid_plan_->out_extent[0];
    } else {
      LTX2_FAIL("fleet engine: unknown decode plan '{}'", kind);
    }
  }

  static Tensor tensor_of(const JobEvent& e, const std::string& name) {
    for (const NamedTensor& t : e.tensors)
      if (t.name == name) return t.tensor;
    LTX2_FAIL("fleet engine: result '{}' from rank {} has no tensor '{}'", e.name, e.rank, name);
  }

  // Copies a piece (a view into the result ring) straight into its tile, so the ring space is
  // free again once the event is dropped.
  void add_piece(const JobEvent& e) {
    const int64_t tile = e.data.at("tile"), frames = e.data.at("frames"), start = e.data.at("frame_start"),
                  row = e.data.at("row_start");
    const Tensor piece = tensor_of(e, "pixels");
    LTX2_CHECK(tile >= 0 && tile < static_cast<int64_t>(boxes_.size()),
               "fleet engine: tile {} from rank {} is not in the decode plan", tile, e.rank);
    const auto [F, H, W] = boxes_[static_cast<size_t>(tile)];
    const bool final_frames = plan_ == DecodePlan::Frames;
    LTX2_CHECK(
        frames == F && piece.dim() == 4 && piece.size(0) >= 1 && piece.size(2) == W && piece.size(3) == 3 &&
            (final_frames ? piece.dtype() == DType::U8
                          : piece.dtype() == DType::F32 || piece.dtype() == DType::BF16),
        "fleet engine: tile {} piece {} of a {}-frame tile does not fit the decode plan's {}x{}x{} box", tile,
        piece.str(), frames, F, H, W);
    auto it = tiles_.find(tile);
    if (it == tiles_.end())
      it = tiles_.emplace(tile, TileBuffer{Tensor::empty({frames, H, W, 3}, piece.dtype()), 0, 0}).first;
    TileBuffer& b = it->second;
    const int64_t n = piece.size(0), rows = piece.size(1);
    LTX2_CHECK(piece.dtype() == b.pixels.dtype() && start == b.frames_done && row == b.rows_done &&
                   start + n <= frames && row + rows <= H && (n == 1 || rows == H),
               "fleet engine: tile {} piece {} at frame {} row {} out of order", tile, piece.str(), start,
               row);
    b.pixels.narrow(0, start, n).narrow(1, row, rows).copy_(piece);
    if (rows == H) {
      b.frames_done += n;
    } else if ((b.rows_done += rows) == H) {
      b.rows_done = 0;
      ++b.frames_done;
    }
  }

  void feed() {
    switch (plan_) {
      case DecodePlan::None: return;
      case DecodePlan::Frames: return feed_frames();
      case DecodePlan::Tiles: return feed_tiles();
      case DecodePlan::Grid: return feed_grid();
    }
  }

  // Rank 0's final frames, handed out as they arrive.
  void feed_frames() {
    const auto it = tiles_.find(0);
    if (it == tiles_.end() || it->second.frames_done == next_frame_) return;
    const int64_t stop = it->second.frames_done;
    emit(it->second.pixels.narrow(0, next_frame_, stop - next_frame_));
    next_frame_ = stop;
  }

  // Complete tiles go to the blender in plan order (the in-process decode's order, so each pixel's
  // sum is the same); the frames it releases leave as 8-bit RGB, converted as the in-process
  // engine converts them.
  void feed_tiles() {
    for (;;) {
      const auto it = tiles_.find(static_cast<int64_t>(next_tile_));
      if (it == tiles_.end() || it->second.frames_done < boxes_[next_tile_][0]) return;
      const Tensor decoded = it->second.pixels.permute({3, 0, 1, 2}).unsqueeze(0).contiguous();
      tiles_.erase(it);
      for (const Tensor& chunk : blender_->add(next_tile_, decoded)) {
        emit(ops::decoded_to_rgb8(chunk.select(0, 0)));
        next_frame_ += chunk.size(2);
      }
      ++next_tile_;
    }
  }

  // The reference's plan: complete tiles go to the blender in assembly order (multigpu.md 5.2),
  // each mapped to [0, 1] first as the reference maps its tiles; the frames it releases leave as
  // 8-bit RGB.
  void feed_grid() {
    while (next_tile_ < order_.size()) {
      const int64_t t = order_[next_tile_];
      const auto it = tiles_.find(t);
      if (it == tiles_.end() || it->second.frames_done < boxes_[static_cast<size_t>(t)][0]) return;
      const Tensor unit = parallel::decoded_tile_to_unit(it->second.pixels);
      tiles_.erase(it);
      for (const Tensor& chunk : blender_->add(static_cast<size_t>(t), unit)) {
        emit(parallel::unit_frames_to_rgb8(chunk));
        next_frame_ += chunk.size(2);
      }
      ++next_tile_;
    }
  }

  void emit(Tensor frames) {
    const int64_t n = frames.size(0), first = seen_frames_;
    seen_frames_ += n;
    if (seen_frames_ <= delivered_frames_) return;
    if (first < delivered_frames_)
      frames = frames.narrow(0, delivered_frames_ - first, seen_frames_ - delivered_frames_);
    delivered_frames_ = seen_frames_;
    if (cb_.video_chunk) cb_.video_chunk(frames);
  }

  const pipeline::PipelineCallbacks& cb_;
  int world_;
  std::array<int64_t, 3> video_;
  bool has_video_;
  DecodePlan plan_ = DecodePlan::None;                    // until rank 0 says
  std::vector<Box> boxes_;                                // per tile of the plan
  std::unique_ptr<video_vae::DecodeTilePlan> tile_plan_;  // "tiles"
  std::unique_ptr<tiling::TilePlan> grid_plan_;           // "grid"
  std::unique_ptr<tiling::TileBlender> blender_;          // either plan's
  std::vector<int64_t> order_;  // "grid": its tiles in assembly order ("tiles" take plan order)
  size_t next_tile_ = 0;        // how many tiles the blender has taken
  std::map<int64_t, TileBuffer> tiles_;
  int64_t next_frame_ = 0;  // the first frame not yet handed out
  int64_t total_frames_ = 0;
  int64_t seen_progress_ = 0, delivered_progress_ = 0;
  int64_t seen_frames_ = 0, delivered_frames_ = 0;
  bool audio_delivered_ = false;
};

class FleetEngine final : public pipeline::GenerationEngine {
 public:
  FleetEngine(PipelineKind kind, FleetOptions options)
      : kind_(kind), world_(static_cast<int>(options.devices.size())), controller_(std::move(options)) {
    controller_.start();
  }
  ~FleetEngine() override {
    try {
      controller_.shutdown();
    } catch (const std::exception& e) {
      log_error("fleet engine: shutdown: {}", e.what());
    }
  }

  void generate(const GenerationRequest& request, const pipeline::PipelineCallbacks& callbacks) override {
    validate_request(request, kind_);
    if (!controller_.running()) controller_.start();
    controller_.submit({{"request", to_json(request)}});
    ResultAssembler assembler(callbacks, world_, {request.num_frames, request.height, request.width},
                              output_has_video(request));
    try {
      for (;;) {
        const std::optional<JobEvent> e = controller_.next(std::chrono::milliseconds(100));
        if (!e) continue;
        if (e->kind == JobEvent::Kind::Output) assembler.on_output(*e);
        if (e->kind == JobEvent::Kind::Retry) assembler.restart();
        if (e->kind == JobEvent::Kind::Done) break;
      }
    } catch (const JobFailed&) {
      throw;  // the job is over; the fleet serves the next one
    } catch (const FleetBroken&) {
      throw;  // the job was dropped; the next request restarts the fleet
    } catch (const Interrupted&) {
      throw;
    } catch (...) {
      // A callback or the assembly failed mid-job: let the job run out so that its results do not
      // reach the next request.
      drain_job();
      throw;
    }
    assembler.finish();
  }

 private:
  void drain_job() {
    try {
      for (;;) {
        const std::optional<JobEvent> e = controller_.next(std::chrono::milliseconds(100));
        if (e && e->kind == JobEvent::Kind::Done) return;
      }
    } catch (const JobFailed&) {
    } catch (const FleetBroken&) {
    }
  }

  PipelineKind kind_;
  int world_;
  Controller controller_;
};

}  // namespace

std::vector<Device> fleet_devices(const FleetEngineOptions& opt) {
  LTX2_CHECK(opt.stage2_parallel == "tdp" || opt.stage2_parallel == "sp",
             "--stage2-parallel must be 'tdp' or 'sp', got '{}'", opt.stage2_parallel);
  LTX2_CHECK(opt.tdp_height_tiles >= 0 && opt.tdp_width_tiles >= 0 && opt.tdp_overlap >= 0 &&
                 opt.vae_height_tiles >= 0 && opt.vae_width_tiles >= 0 && opt.vae_overlap >= 0,
             "TDP / VAE tile counts and overlaps must not be negative");
  LTX2_CHECK(opt.retries >= 0, "--retries must not be negative, got {}", opt.retries);
  LTX2_CHECK(opt.job_timeout.count() > 0, "--job-timeout must be positive, got {} ms",
             opt.job_timeout.count());
  LTX2_CHECK(
      opt.tile_piece_bytes >= kMinTilePieceBytes && opt.tile_piece_bytes <= ChannelSizes{}.ring_capacity / 4,
      "fleet: tile_piece_bytes {} outside [{}, {}] (a quarter of the result ring)", opt.tile_piece_bytes,
      kMinTilePieceBytes, ChannelSizes{}.ring_capacity / 4);
  for (int g : opt.gpus) LTX2_CHECK(g >= 0, "--gpus: negative device index {}", g);
  LTX2_CHECK(!opt.gpus.empty() || opt.ranks >= 1, "--ranks must be at least 1, got {}", opt.ranks);
  const std::vector<Device> devices = plan_devices(opt.gpus, opt.gpus.empty() ? opt.ranks : 0);
  LTX2_CHECK(static_cast<int>(devices.size()) <= kMaxRanks, "a fleet has at most {} ranks, asked for {}",
             kMaxRanks, devices.size());
  return devices;
}

std::unique_ptr<pipeline::GenerationEngine> make_fleet_engine(PipelineKind kind, const ModelPaths& paths,
                                                              const FleetEngineOptions& opt) {
  validate_model_paths(paths, kind);
  FleetOptions fleet;
  fleet.devices = fleet_devices(opt);
  fleet.runner = kind == PipelineKind::Distilled ? kDistilledRunner : kTwoStageRunner;
  fleet.setup_config = {{"paths", to_json(paths)},
                        {"stage2_parallel", opt.stage2_parallel},
                        {"tdp_height_tiles", opt.tdp_height_tiles},
                        {"tdp_width_tiles", opt.tdp_width_tiles},
                        {"tdp_overlap", opt.tdp_overlap},
                        {"vae_height_tiles", opt.vae_height_tiles},
                        {"vae_width_tiles", opt.vae_width_tiles},
                        {"vae_rank_split", opt.vae_rank_split},
                        {"vae_overlap", opt.vae_overlap},
                        {"plan_shapes", pipeline::to_json(opt.plan_shapes)},
                        {"gpu_memory_gib", opt.gpu_memory_gib},
                        {"quantization", quantization_name(opt.quantization)},
                        {"tile_piece_bytes", opt.tile_piece_bytes}};
  fleet.shm_prefix = opt.shm_prefix;
  fleet.ready_timeout = opt.ready_timeout;
  fleet.collective_timeout = opt.collective_timeout;
  fleet.heartbeat_timeout = opt.heartbeat_timeout;
  fleet.job_timeout = opt.job_timeout;
  fleet.progress_timeout = opt.progress_timeout;
  fleet.max_retries = opt.retries;
  return std::make_unique<FleetEngine>(kind, std::move(fleet));
}

}  // namespace ltx2::runtime
