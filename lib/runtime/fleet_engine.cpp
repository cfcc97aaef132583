// The fleet engine: the pipeline runners every rank executes ("pipeline.<name>" per pipeline kind:
// pipeline.distilled, pipeline.two-stage, ...) and the driver-side engine that turns their streamed results
// into PipelineCallbacks calls (see fleet_engine.h).
//
// Results a job streams (runner -> driver):
//   "num_frames" rank 0, {num_frames}: the video's frame count, the request's or (--num-frames
//                unset) the duration head's prediction, once the prompt is encoded and before any
//                progress or frame; the driver sizes the video by it
//   "progress"   rank 0, {stage, step, steps}
//   "video_plan" rank 0 (none for a request without video: a .wav), how the decoded video
//                arrives: {plan: "frames", frames, height, width} (rank 0 streams the final
//                frames as tile 0), {plan: "tiles", latent_shape,
//                out_channels, config: [[tile_size, overlap] x 3], factors} (the pipeline's tile
//                plan, which the driver rebuilds with plan_tiled_decode), {plan:
//                "diffusion_tiles", tile_plan, content: [[start, stop] x 3]} (the diffusion
//                decoder's plan itself, tile_plan_json, and the video's box in its blend) or
//                {plan: "grid", grid:
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
#include "models/video_vae/tiling.h"
#include "ops/rgb8.h"
#include "ops/shape.h"
#include "parallel/distributed_decode.h"
#include "parallel/guidance_parallel.h"
#include "parallel/sequence_parallel.h"
#include "parallel/tdp.h"
#include "parallel/text_broadcast.h"
#include "parallel/vae_tile_plan.h"
#include "pipeline/latent_tools.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_models.h"
#include "pipeline/request_fields.h"
#include "runtime/controller.h"
#include "runtime/decode_stream.h"
#include "runtime/launcher.h"
#include "runtime/nodes.h"
#include "runtime/runner.h"
#include "tiling/tile_blender.h"

namespace ltx2::runtime {

namespace {

using nlohmann::json;

// The registered runner of a pipeline kind: "pipeline.<name>".
std::string runner_name(PipelineKind kind) {
  return std::string("pipeline.") + pipeline_name(kind);
}
constexpr size_t kMinTilePieceBytes = 1 << 10;

// ---------------------------------------------------------------------------------------------
// Worker side.

class PipelineRunner final : public Runner {
 public:
  explicit PipelineRunner(PipelineKind kind) : kind_(kind) {}

  void setup(const json& config, const RunnerContext& ctx) override {
    ctx_ = ctx;
    const RankSetup setup = rank_setup_from_json(config);
    const RankSettings& settings = setup.settings;
    pipeline::PipelineOptions options = pipeline::PipelineOptions::on_device(ctx.device);
    options.quantization = settings.quantization;
    ops::set_attention_precision(settings.attention_precision);
    // The strategies every stage runs with: sequence parallel transformer passes (a guided stage 1's
    // passes on different ranks when they divide over them, stage 2 tiled data parallel when
    // asked), Gemma and the duration head on rank 0 with their contexts and count broadcast, the
    // distributed decode. One rank runs the pipeline as the in-process engine does, but for the
    // decode, whose frames reach the driver through this rank's results.
    pipeline::StageExecutors& ex = options.executors;
    if (ctx.world_size > 1) {
      options.load_text_encoder = ctx.rank == 0;
      ex.text_encode = std::make_shared<parallel::BroadcastTextEncoder>(*ctx.comm);
      ex.duration = std::make_shared<parallel::BroadcastDuration>(*ctx.comm);
      ex.stage1 = ex.stage2 = std::make_shared<parallel::SequenceParallelExecutor>(*ctx.comm);
      if (pipeline_traits(kind_).guided && settings.stage1_parallel == Stage1Parallel::Auto)
        ex.stage1 = std::make_shared<parallel::GuidanceParallelExecutor>(*ctx.comm, ctx.groups);
      if (pipeline_traits(kind_).distilled_lora && settings.stage2_parallel == Stage2Parallel::TiledData) {
        tdp_ = std::make_shared<parallel::TiledDataParallelExecutor>(*ctx.comm, ctx.groups,
                                                                     tdp_tiling(settings, ctx.world_size));
        ex.stage2 = tdp_;
        ex.stage2_sigmas = {0.625f, 0.4f, 0.0f};
      }
    }
    decode_ = std::make_shared<parallel::DistributedDecode>(
        *ctx.comm, parallel::DecodePlanChoice{settings.vae_height_tiles, settings.vae_width_tiles,
                                              settings.vae_rank_split, settings.vae_overlap});
    tile_piece_bytes_ = settings.tile_piece_bytes;
    ex.video_decode = decode_;
    if (ctx.device.is_cuda() && !settings.plan_shapes.empty())
      options.residency =
          pipeline::plan_residency(setup.paths, options, settings.plan_shapes,
                                   pipeline::device_memory_budget(ctx.device, settings.gpu_memory_gib));
    pipeline_ = std::make_unique<pipeline::Pipeline>(kind_, setup.paths, std::move(options));
  }

  json run(const Job& job, ResultSink& out) override {
    const GenerationRequest request = request_from_json(job.params.at("request"));
    DecodeStream stream(out, tile_piece_bytes_);
    decode_->set_sink(&stream);
    pipeline::PipelineCallbacks callbacks;
    // The frame count is known once the prompt is encoded (the duration head's when --num-frames is
    // unset): stage 2's tiles are cut for it, and the driver learns it before any frame.
    callbacks.num_frames = [this, &out, &request](int num_frames) {
      if (tdp_) tdp_->set_video_grid(pipeline::video_latent_grid(num_frames, request.height, request.width));
      if (ctx_.rank == 0) out.output("num_frames", {{"num_frames", num_frames}});
    };
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
    pipeline_->run(request, callbacks);  // the driver's engine validated it
    decode_->set_sink(nullptr);
    return json::object();
  }

 private:
  PipelineKind kind_;
  RunnerContext ctx_;
  std::shared_ptr<parallel::TiledDataParallelExecutor> tdp_;  // stage 2's, when it runs TDP
  std::shared_ptr<parallel::DistributedDecode> decode_;
  size_t tile_piece_bytes_ = 0;
  std::unique_ptr<pipeline::Pipeline> pipeline_;
};

const bool registered_runners = [] {
  for (PipelineKind kind : {PipelineKind::Distilled, PipelineKind::TwoStage, PipelineKind::OneStage,
                            PipelineKind::Keyframes, PipelineKind::Hq})
    register_runner(runner_name(kind), [kind] { return std::make_unique<PipelineRunner>(kind); });
  return true;
}();

// ---------------------------------------------------------------------------------------------
// Driver side.

// One request's streamed results turned into callbacks. After a retry the rerun repeats what the
// caller already has; `delivered_*` (kept across attempts) say how much of it to skip.
//
// The decoded video arrives in one of four ways, which rank 0's "video_plan" names: "frames" (rank
// 0 streams the final 8-bit frames as tile 0 of the whole video), "tiles" (the pipeline's tile plan:
// decoded tiles, blended here in plan order by the pipeline's own blender), "diffusion_tiles" (the
// diffusion decoder's plan: the same, its content box cropped out) or "grid" (the reference's
// plan: decoded tiles blended here in assembly order).
class ResultAssembler {
 public:
  // video: the request's frames (kNumFramesFromDurationHead when --num-frames is unset: rank 0's
  // "num_frames" gives them), height and width, which the decode plan must produce; has_video
  // false: the request decodes no video (output_has_video), so no plan may come.
  ResultAssembler(const pipeline::PipelineCallbacks& cb, int world, std::array<int64_t, 3> video,
                  bool has_video)
      : cb_(cb), world_(world), request_frames_(video[0]), video_(video), has_video_(has_video) {}

  void restart() {
    video_[0] = request_frames_;
    plan_ = DecodePlan::None;
    grid_plan_.reset();
    tile_plan_.reset();
    diffusion_plan_.reset();
    blended_frames_ = 0;
    blender_.reset();
    order_.clear();
    tiles_.clear();
    boxes_.clear();
    next_tile_ = 0;
    next_frame_ = total_frames_ = 0;
    seen_progress_ = seen_frames_ = 0;
  }

  void on_output(const JobEvent& e) {
    if (e.name == "num_frames") {
      set_num_frames(e.data.at("num_frames"), e.rank);
    } else if (e.name == "progress") {
      if (++seen_progress_ > delivered_progress_) {
        delivered_progress_ = seen_progress_;
        if (cb_.progress) cb_.progress(e.data.at("stage"), e.data.at("step"), e.data.at("steps"));
      }
    } else if (e.name == "video_plan") {
      LTX2_CHECK(has_video_, "fleet engine: a decode plan from rank {} for a request without video", e.rank);
      LTX2_CHECK(plan_ == DecodePlan::None, "fleet engine: a second decode plan from rank {}", e.rank);
      LTX2_CHECK(video_[0] != kNumFramesFromDurationHead,
                 "fleet engine: a decode plan from rank {} before the video's frame count", e.rank);
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
  enum class DecodePlan { None, Frames, Tiles, DiffusionTiles, Grid };

  // Rank 0's resolved frame count: the request's when it gives one; after a retry, the count the
  // caller already has (the prediction is deterministic, so a rerun that differs is a fault).
  void set_num_frames(int64_t frames, int rank) {
    LTX2_CHECK(frames > 0 && (request_frames_ == kNumFramesFromDurationHead || frames == request_frames_) &&
                   (delivered_num_frames_ == 0 || frames == delivered_num_frames_),
               "fleet engine: rank {} resolved {} frames for a request of {} (an earlier attempt: {})", rank,
               frames, request_frames_, delivered_num_frames_);
    video_[0] = frames;
    if (delivered_num_frames_ == 0 && cb_.num_frames) cb_.num_frames(static_cast<int>(frames));
    delivered_num_frames_ = frames;
  }

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
      boxes_ = boxes_of(*tile_plan_);
      total_frames_ = tile_plan_->video_shape[2];
    } else if (kind == "diffusion_tiles") {
      diffusion_plan_ = std::make_unique<tiling::TilePlan>(tile_plan_from_json(j.at("tile_plan")));
      for (size_t a = 0; a < 3; ++a) {
        content_[a] = {j.at("content").at(a).at(0), j.at("content").at(a).at(1)};
        LTX2_CHECK(
            content_[a].start >= 0 && content_[a].start < content_[a].stop &&
                content_[a].stop <= diffusion_plan_->out_extent[a],
            "fleet engine: the diffusion decode plan's content box [{}, {}) on axis {} is outside its {}",
            content_[a].start, content_[a].stop, a, diffusion_plan_->out_extent[a]);
      }
      check_video(content_[0].length(), content_[1].length(), content_[2].length());
      plan_ = DecodePlan::DiffusionTiles;
      blender_ = std::make_unique<tiling::TileBlender>(*diffusion_plan_, 1, 3);
      boxes_ = boxes_of(*diffusion_plan_);
      total_frames_ = content_[0].length();
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
      total_frames_ = grid_plan_->out_extent[0];
      boxes_ = boxes_of(*grid_plan_);
      for (const Box& box : boxes_)
        LTX2_CHECK(box[0] == total_frames_, "fleet engine: a grid decode plan must not tile the frames");
    } else {
      LTX2_FAIL("fleet engine: unknown decode plan '{}'", kind);
    }
  }

  static std::vector<Box> boxes_of(const tiling::TilePlan& plan) {
    std::vector<Box> boxes;
    for (const tiling::Tile& t : plan.tiles)
      boxes.push_back({t.out[0].length(), t.out[1].length(), t.out[2].length()});
    return boxes;
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
      case DecodePlan::Tiles:
      case DecodePlan::DiffusionTiles: return feed_tiles();
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
      std::vector<Tensor> released = blender_->add(next_tile_, decoded);
      if (plan_ == DecodePlan::DiffusionTiles) released = crop_to_content(std::move(released));
      emit_released(released, [](const Tensor& frame) { return ops::decoded_to_rgb8(frame.select(0, 0)); });
      ++next_tile_;
    }
  }

  // The diffusion decoder's plan blends the pixels of its size-floored latent: only the content
  // box's frames and pixels leave.
  std::vector<Tensor> crop_to_content(std::vector<Tensor> frames) {
    std::vector<Tensor> out;
    for (const Tensor& f : frames) {
      const int64_t index = blended_frames_++;
      if (index < content_[0].start || index >= content_[0].stop) continue;
      out.push_back(f.narrow(3, content_[1].start, content_[1].length())
                        .narrow(4, content_[2].start, content_[2].length())
                        .contiguous());
    }
    return out;
  }

  // The reference's plan, whose tiles all span every frame: once every tile has frames up to some
  // frame, the tiles add them in assembly order (multigpu.md 5.2), each run mapped to [0, 1] first
  // as the reference maps its tiles, so the blender holds only those frames' sums; the frames it
  // releases leave as 8-bit RGB.
  void feed_grid() {
    int64_t ready = total_frames_;  // frames every tile has
    for (size_t t = 0; t < boxes_.size(); ++t) {
      if (blender_->frames_added(t) == total_frames_) continue;  // its buffer is gone
      const auto it = tiles_.find(static_cast<int64_t>(t));
      ready = std::min(ready, it == tiles_.end() ? 0 : it->second.frames_done);
    }
    for (const int64_t t : order_) {
      const auto tile = static_cast<size_t>(t);
      const int64_t added = blender_->frames_added(tile);
      if (ready <= added) continue;
      const auto it = tiles_.find(t);
      const Tensor unit = parallel::decoded_tile_to_unit(it->second.pixels.narrow(0, added, ready - added));
      if (ready == total_frames_) tiles_.erase(it);
      emit_released(blender_->add(tile, unit, added), parallel::unit_frames_to_rgb8);
    }
  }

  // The frames one add to the blender made final (a [B, C, 1, H, W] chunk each) leave as one run of
  // 8-bit RGB, as the in-process decode hands a temporal group's frames on at once.
  template <typename ToRgb8>
  void emit_released(const std::vector<Tensor>& frames, const ToRgb8& to_rgb8) {
    if (frames.empty()) return;
    std::vector<Tensor> rgb;
    for (const Tensor& f : frames) rgb.push_back(to_rgb8(f));
    emit(rgb.size() == 1 ? rgb[0] : ops::cat(rgb, 0));
    next_frame_ += static_cast<int64_t>(frames.size());
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
  int64_t request_frames_;        // the request's --num-frames (kNumFramesFromDurationHead: unset)
  std::array<int64_t, 3> video_;  // frames resolved by rank 0's "num_frames", height, width
  bool has_video_;
  DecodePlan plan_ = DecodePlan::None;                    // until rank 0 says
  std::vector<Box> boxes_;                                // per tile of the plan
  std::unique_ptr<video_vae::DecodeTilePlan> tile_plan_;  // "tiles"
  std::unique_ptr<tiling::TilePlan> grid_plan_;           // "grid"
  std::unique_ptr<tiling::TilePlan> diffusion_plan_;      // "diffusion_tiles"
  std::array<tiling::Range, 3> content_{};                // "diffusion_tiles": the video in its blend
  int64_t blended_frames_ = 0;                            // "diffusion_tiles": frames the blender released
  std::unique_ptr<tiling::TileBlender> blender_;          // any plan's but "frames"
  std::vector<int64_t> order_;  // "grid": its tiles in assembly order (the others take plan order)
  size_t next_tile_ = 0;        // "tiles", "diffusion_tiles": how many tiles the blender has taken
  std::map<int64_t, TileBuffer> tiles_;
  int64_t next_frame_ = 0;  // the first frame not yet handed out
  int64_t total_frames_ = 0;
  int64_t seen_progress_ = 0, delivered_progress_ = 0;
  int64_t seen_frames_ = 0, delivered_frames_ = 0;
  int64_t delivered_num_frames_ = 0;  // the count handed to the caller (0: none yet)
  bool audio_delivered_ = false;
};

class FleetEngine final : public pipeline::GenerationEngine {
 public:
  FleetEngine(PipelineKind kind, ModelFacts facts, FleetOptions options, RankSettings settings)
      : GenerationEngine(kind, std::move(facts)),
        world_(static_cast<int>(options.devices.size())),
        settings_(std::move(settings)),
        controller_(std::move(options)) {
    controller_.start();
  }
  ~FleetEngine() override {
    try {
      controller_.shutdown();
    } catch (const std::exception& e) {
      log_error("fleet engine: shutdown: {}", e.what());
    }
  }

 private:
  void run(const GenerationRequest& request, const pipeline::PipelineCallbacks& callbacks) override {
    check_tdp_tiling(settings_, world_, request);  // a job the ranks cannot tile fails before it starts
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

  int world_;
  RankSettings settings_;  // the checks a request needs against the ranks' settings
  Controller controller_;
};

}  // namespace

std::vector<Device> fleet_devices(const FleetEngineOptions& opt) {
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
  const std::vector<Device> node = plan_devices(opt.gpus, opt.gpus.empty() ? opt.ranks : 0);
  // Across nodes (nodes.h) every node runs the same ranks on its own devices: ranks [k * L, (k + 1)
  // * L) on node k.
  const int nodes = node_count();
  LTX2_CHECK(static_cast<int>(node.size()) * nodes <= kMaxRanks,
             "a fleet has at most {} ranks, asked for {} ({} nodes of {})", kMaxRanks, node.size() * nodes,
             nodes, node.size());
  std::vector<Device> devices;
  for (int k = 0; k < nodes; ++k) devices.insert(devices.end(), node.begin(), node.end());
  return devices;
}

std::unique_ptr<pipeline::GenerationEngine> make_fleet_engine(PipelineKind kind, const ModelPaths& paths,
                                                              const FleetEngineOptions& opt) {
  validate_model_paths(paths, kind);
  FleetOptions fleet;
  fleet.devices = fleet_devices(opt);
  fleet.runner = runner_name(kind);
  fleet.setup_config = to_json(RankSetup{paths, opt});
  fleet.shm_prefix = opt.shm_prefix;
  fleet.ready_timeout = opt.ready_timeout;
  fleet.collective_timeout = opt.collective_timeout;
  fleet.heartbeat_timeout = opt.heartbeat_timeout;
  fleet.job_timeout = opt.job_timeout;
  fleet.progress_timeout = opt.progress_timeout;
  fleet.max_retries = opt.retries;
  return std::make_unique<FleetEngine>(kind, pipeline::read_model_facts(paths), std::move(fleet), opt);
}

}  // namespace ltx2::runtime
