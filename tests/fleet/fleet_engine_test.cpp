// The fleet engine on the tiny model set: the pipelines on 1-3 CPU ranks (sequence parallel,
// tiled data parallel stage 2, distributed decode) against the in-process engine, decoded tiles
// whose frames exceed the piece bound (streamed in bands of rows), and a worker killed mid-request
// (retry or error); on the tiny LTX-2.5 set, --num-frames unset (rank 0's duration head).
#include "runtime/fleet_engine.h"

#include <signal.h>

#include <cmath>
#include <cstdio>

#include "fleet_support.h"
#include "model_sets/tiny_model.h"
#include "ops/shape.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

const model_sets::TinyModelPaths& tiny_set() {
  static test::ScratchDir dir("fleet_engine_tiny");
  static const model_sets::TinyModelPaths paths = model_sets::write_tiny_model_set(dir.path() + "/set");
  return paths;
}

ModelPaths tiny_paths(PipelineKind kind) {
  const model_sets::TinyModelPaths& t = tiny_set();
  ModelPaths p;
  p.checkpoint = t.checkpoint;
  p.gemma_root = t.gemma;
  p.spatial_upsampler = t.upsampler;
  if (kind == PipelineKind::TwoStage) p.distilled_loras = {{t.lora, 1.0}};
  return p;
}

GenerationRequest tiny_request(PipelineKind kind) {
  GenerationRequest r;
  r.prompt = "a red fox runs through snow";
  r.negative_prompt = "blurry";
  r.seed = 42;
  r.height = 64;
  r.width = 192;
  r.num_frames = 9;
  r.num_inference_steps = 3;
  static test::ScratchDir out("fleet_engine_out");
  r.output_path = out.file("video.mp4");  // validated only: the engine hands frames to the caller
  if (kind == PipelineKind::TwoStage) {
    r.video_guidance = default_video_guidance();
    r.audio_guidance = default_audio_guidance();
    r.video_guidance.stg_blocks = r.audio_guidance.stg_blocks = {0};
  }
  return r;
}

struct Generated {
  Tensor frames, waveform;
  int64_t sample_rate = 0;
  int chunks = 0;
  std::vector<std::string> progress;
  std::vector<int> num_frames;            // each num_frames callback's count
  size_t progress_before_num_frames = 0;  // progress calls before the (last) count
};

Generated generate(pipeline::GenerationEngine& engine, const GenerationRequest& request,
                   const std::function<void()>& on_first_progress = {}) {
  Generated g;
  std::vector<Tensor> chunks;
  pipeline::PipelineCallbacks cb;
  cb.progress = [&](const std::string& stage, int step, int steps) {
    if (g.progress.empty() && on_first_progress) on_first_progress();
    g.progress.push_back(stage + ":" + std::to_string(step) + "/" + std::to_string(steps));
  };
  cb.num_frames = [&](int n) {
    g.num_frames.push_back(n);
    g.progress_before_num_frames = g.progress.size();
  };
  cb.video_chunk = [&](const Tensor& f) { chunks.push_back(f.contiguous()); };
  cb.audio = [&](const Tensor& w, int64_t rate) {
    g.waveform = w.contiguous();
    g.sample_rate = rate;
  };
  engine.generate(request, cb);
  REQUIRE(!chunks.empty());
  g.chunks = static_cast<int>(chunks.size());
  g.frames = chunks.size() == 1 ? chunks[0] : ops::cat(chunks, 0);
  return g;
}

runtime::FleetEngineOptions fleet_options(int ranks) {
  runtime::FleetEngineOptions o;
  o.ranks = ranks;
  o.shm_prefix = test::fleet_shm_prefix();
  o.ready_timeout = std::chrono::seconds(60);
  o.collective_timeout = std::chrono::seconds(20);
  o.heartbeat_timeout = std::chrono::seconds(10);
  o.tdp_overlap = 1;  // the tiny stage-2 grid is 2 x 6 latent cells
  return o;
}

Generated run_fleet(PipelineKind kind, const runtime::FleetEngineOptions& o,
                    const GenerationRequest& request) {
  Generated g;
  const auto begin = std::chrono::steady_clock::now();
  {
    auto engine = runtime::make_fleet_engine(kind, tiny_paths(kind), o);
    g = generate(*engine, request);
  }
  std::fprintf(stderr, "fleet engine: %s on %d ranks: %.1f s (start, run, shutdown)\n", pipeline_name(kind),
               o.ranks, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  test::require_clean();
  return g;
}

Generated run_fleet(PipelineKind kind, const runtime::FleetEngineOptions& o) {
  return run_fleet(kind, o, tiny_request(kind));
}

const Generated& local_run(PipelineKind kind) {
  static std::map<PipelineKind, Generated> cache;
  auto it = cache.find(kind);
  if (it == cache.end()) {
    auto engine = pipeline::make_local_engine(kind, tiny_paths(kind));
    it = cache.emplace(kind, generate(*engine, tiny_request(kind))).first;
  }
  return it->second;
}

// max |a - b| / max |b|.
double relative_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<float> x = a.contiguous().to_vector(), y = b.contiguous().to_vector();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(x[i]) - y[i]));
    scale = std::max(scale, std::abs(static_cast<double>(y[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

bool all_finite(const Tensor& t) {
  for (float v : t.contiguous().to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

void report(const char* what, const Generated& got, const Generated& want) {
  std::fprintf(stderr, "fleet engine: %s: frames rel diff %.3g, waveform rel diff %.3g\n", what,
               relative_diff(got.frames, want.frames), relative_diff(got.waveform, want.waveform));
}

}  // namespace

TEST_CASE("fleet engine: distilled results do not depend on the rank count") {
  const Generated& local = local_run(PipelineKind::Distilled);
  REQUIRE(local.frames.shape() == Shape{9, 64, 192, 3});

  // One rank: the reference's decode plan is one whole tile, as the in-process run at this size.
  const Generated one = run_fleet(PipelineKind::Distilled, fleet_options(1));
  CHECK(test::max_abs_diff(one.frames, local.frames) == 0.0f);
  CHECK(test::max_abs_diff(one.waveform, local.waveform) == 0.0f);
  CHECK(one.sample_rate == local.sample_rate);
  CHECK(one.progress == local.progress);
  CHECK(local.num_frames == std::vector<int>{9});
  CHECK(one.num_frames == std::vector<int>{9});

  // The reference's decode plan, 1 x 2 tiles, on one rank, then spread over 2 ranks (as the
  // reference splits 2 ranks) and 3 ranks (as asked) with sequence parallel transformer calls.
  runtime::FleetEngineOptions tiled = fleet_options(1);
  tiled.vae_height_tiles = 1;
  tiled.vae_width_tiles = 2;
  const Generated one_tiled = run_fleet(PipelineKind::Distilled, tiled);
  report("distilled 1 rank, 1x2 decode tiles vs whole decode", one_tiled, one);
  CHECK(test::max_abs_diff(one_tiled.waveform, local.waveform) == 0.0f);
  for (int ranks : {2, 3}) {
    runtime::FleetEngineOptions o = fleet_options(ranks);
    if (ranks == 2) {
      o.vae_rank_split = true;
    } else {
      o.vae_height_tiles = 1;
      o.vae_width_tiles = 2;
    }
    const Generated many = run_fleet(PipelineKind::Distilled, o);
    report(ranks == 2 ? "distilled 2 ranks vs 1" : "distilled 3 ranks vs 1", many, one_tiled);
    CHECK(relative_diff(many.frames, one_tiled.frames) <= 1e-5);
    CHECK(relative_diff(many.waveform, one_tiled.waveform) <= 1e-5);
    CHECK(many.progress == local.progress);
  }
}

TEST_CASE(
    "fleet engine: by default the decode spreads the pipeline's own tiles, the in-process frames on any "
    "rank count") {
  // 97 frames of 64 x 832: the in-process decode's plan is 2 temporal groups x 2 width tiles
  // (80-frame and 768-pixel tiles), so every rank count up to 4 hands tiles to several ranks and
  // the driver blends across groups.
  GenerationRequest wide = tiny_request(PipelineKind::Distilled);
  wide.width = 832;
  wide.num_frames = 97;
  Generated local;
  {
    auto engine = pipeline::make_local_engine(PipelineKind::Distilled, tiny_paths(PipelineKind::Distilled));
    local = generate(*engine, wide);
  }
  REQUIRE(local.frames.shape() == Shape{97, 64, 832, 3});
  for (int ranks : {1, 2, 3}) {
    const Generated many = run_fleet(PipelineKind::Distilled, fleet_options(ranks), wide);
    INFO(ranks << " ranks");
    CHECK(test::max_abs_diff(many.frames, local.frames) == 0.0f);
    CHECK(test::max_abs_diff(many.waveform, local.waveform) == 0.0f);
    CHECK(many.progress == local.progress);
    if (ranks > 1) CHECK(many.chunks == 2);  // each temporal group released once complete
  }
}

TEST_CASE("fleet engine: tile frames larger than the piece bound arrive in bands of rows, unchanged") {
  // 64 x 192 frames: 36 KiB as one 8-bit tile, ~100 KiB per float32 tile of a 1 x 2 split; a 16 KiB
  // bound cuts every frame into bands (a few rows of 8-bit RGB, ten of float32).
  const Generated& local = local_run(PipelineKind::Distilled);
  runtime::FleetEngineOptions small = fleet_options(1);
  small.tile_piece_bytes = 16 << 10;
  const Generated one = run_fleet(PipelineKind::Distilled, small);
  CHECK(test::max_abs_diff(one.frames, local.frames) == 0.0f);
  CHECK(one.chunks == 9);  // each frame handed out once its last band arrived

  runtime::FleetEngineOptions tiled = fleet_options(1);
  tiled.vae_height_tiles = 1;
  tiled.vae_width_tiles = 2;
  const Generated whole_frames = run_fleet(PipelineKind::Distilled, tiled);
  tiled.tile_piece_bytes = 16 << 10;
  const Generated bands = run_fleet(PipelineKind::Distilled, tiled);
  CHECK(test::max_abs_diff(bands.frames, whole_frames.frames) == 0.0f);

  runtime::FleetEngineOptions bad = fleet_options(1);
  bad.tile_piece_bytes = 100;
  CHECK_THROWS_WITH(runtime::fleet_devices(bad), Catch::Matchers::Contains("tile_piece_bytes"));
}

TEST_CASE(
    "fleet engine: two-stage with SP stage 2 (the default) equals one rank, with TDP stage 2 it is "
    "finite and close") {
  const Generated& local = local_run(PipelineKind::TwoStage);
  runtime::FleetEngineOptions sp = fleet_options(2);  // stage 2 and the decode as the defaults have them
  const Generated sp2 = run_fleet(PipelineKind::TwoStage, sp);
  report("two-stage SP 2 ranks vs in-process", sp2, local);
  CHECK(relative_diff(sp2.frames, local.frames) <= 1e-5);
  CHECK(relative_diff(sp2.waveform, local.waveform) <= 1e-5);

  runtime::FleetEngineOptions tdp = sp;
  tdp.stage2_parallel = runtime::Stage2Parallel::TiledData;
  const Generated tdp2 = run_fleet(PipelineKind::TwoStage, tdp);
  report("two-stage TDP 2 ranks vs SP 2 ranks", tdp2, sp2);
  CHECK(tdp2.frames.shape() == sp2.frames.shape());
  CHECK(tdp2.waveform.shape() == sp2.waveform.shape());
  CHECK(all_finite(tdp2.frames));
  CHECK(all_finite(tdp2.waveform));
  // The audio comes from stage 1 (SP), which TDP does not touch.
  CHECK(relative_diff(tdp2.waveform, sp2.waveform) <= 1e-5);
}

TEST_CASE("fleet engine: a worker killed mid-request is retried transparently, or reported without retries") {
  const Generated& local = local_run(PipelineKind::Distilled);
  const auto kill_a_worker = [] {
    const std::vector<int> pids = test::child_pids();
    REQUIRE(!pids.empty());
    kill(pids.back(), SIGKILL);
  };
  {
    runtime::FleetEngineOptions o = fleet_options(2);
    o.vae_width_tiles = 1;
    o.retries = 1;
    auto engine = runtime::make_fleet_engine(PipelineKind::Distilled, tiny_paths(PipelineKind::Distilled), o);
    const Generated g = generate(*engine, tiny_request(PipelineKind::Distilled), kill_a_worker);
    CHECK(relative_diff(g.frames, local.frames) <= 1e-5);
    CHECK(g.progress == local.progress);  // nothing repeated after the restart
    CHECK(g.num_frames == std::vector<int>{9});
  }
  test::require_clean();
  {
    runtime::FleetEngineOptions o = fleet_options(2);
    o.vae_width_tiles = 1;
    o.retries = 0;
    auto engine = runtime::make_fleet_engine(PipelineKind::Distilled, tiny_paths(PipelineKind::Distilled), o);
    REQUIRE_THROWS_AS(generate(*engine, tiny_request(PipelineKind::Distilled), kill_a_worker), Error);
    // The engine starts a fresh fleet for the next request; a callback that throws mid-request
    // ends it without leaving its results to the one after.
    REQUIRE_THROWS_WITH(generate(*engine, tiny_request(PipelineKind::Distilled),
                                 [] { throw std::runtime_error("caller gave up"); }),
                        "caller gave up");
    const Generated g = generate(*engine, tiny_request(PipelineKind::Distilled));
    CHECK(relative_diff(g.frames, local.frames) <= 1e-5);
  }
  test::require_clean();
}

TEST_CASE(
    "fleet engine: --num-frames unset, rank 0's duration head gives the driver and every rank the "
    "in-process length and video") {
  // The tiny LTX-2.5 set with its duration head, and pipeline_distilled_25_auto's request, for
  // which the head predicts 17 frames.
  ModelPaths paths;
  paths.transformer = test::golden_dir("pipeline_distilled_25") + "/transformer.safetensors";
  paths.duration_head = test::golden_dir("pipeline_distilled_25") + "/duration_head.safetensors";
  paths.text_encoder = test::golden_dir("gemma4_tiny") + "/text_encoder.safetensors";
  paths.video_vae = paths.audio_vae = test::golden_dir("pipeline_distilled") + "/checkpoint.safetensors";
  paths.spatial_upsampler = test::golden_dir("pipeline_distilled") + "/spatial_upsampler.safetensors";
  GenerationRequest r = tiny_request(PipelineKind::Distilled);
  r.prompt = "A calm forest with mist, the camera pans slowly over a river at golden hour.";
  r.seed = 11;
  r.height = 64;
  r.width = 128;
  r.frame_rate = 8;
  r.num_frames = kNumFramesFromDurationHead;
  Generated local;
  {
    auto engine = pipeline::make_local_engine(PipelineKind::Distilled, paths);
    local = generate(*engine, r);
  }
  REQUIRE(local.num_frames == std::vector<int>{17});
  REQUIRE(local.frames.shape() == Shape{17, 64, 128, 3});
  Generated two;
  {
    auto engine = runtime::make_fleet_engine(PipelineKind::Distilled, paths, fleet_options(2));
    two = generate(*engine, r);
  }
  test::require_clean();
  CHECK(two.num_frames == std::vector<int>{17});
  CHECK(two.progress_before_num_frames == 0);  // the driver knew the length before anything else
  CHECK(test::max_abs_diff(two.frames, local.frames) == 0.0f);
  CHECK(test::max_abs_diff(two.waveform, local.waveform) == 0.0f);
  CHECK(two.progress == local.progress);
}

TEST_CASE("fleet engine: a request past the job timeout fails naming it and --job-timeout") {
  CHECK(runtime::FleetEngineOptions{}.job_timeout == std::chrono::hours(1));
  {
    runtime::FleetEngineOptions o = fleet_options(1);
    o.job_timeout = std::chrono::milliseconds(200);  // the tiny request takes seconds on a CPU
    auto engine = runtime::make_fleet_engine(PipelineKind::Distilled, tiny_paths(PipelineKind::Distilled), o);
    REQUIRE_THROWS_WITH(generate(*engine, tiny_request(PipelineKind::Distilled)),
                        Catch::Matchers::Contains("job 1 failed: fleet broken: job 1 passed its timeout of "
                                                  "200 ms (--job-timeout; rank(s) 0 still running)"));
  }
  test::require_clean();
}

TEST_CASE("fleet engine: options are checked before any process starts") {
  runtime::FleetEngineOptions o = fleet_options(0);
  CHECK_THROWS_WITH(runtime::fleet_devices(o), Catch::Matchers::Contains("--ranks"));
  o = fleet_options(2);
  o.retries = -1;
  CHECK_THROWS_WITH(runtime::fleet_devices(o), Catch::Matchers::Contains("--retries"));
  o = fleet_options(2);
  o.job_timeout = std::chrono::milliseconds(0);
  CHECK_THROWS_WITH(runtime::fleet_devices(o), Catch::Matchers::Contains("--job-timeout must be positive"));
  CHECK(runtime::fleet_devices(fleet_options(3)).size() == 3);
  ModelPaths missing = tiny_paths(PipelineKind::Distilled);
  missing.checkpoint += ".absent";
  CHECK_THROWS_AS(runtime::make_fleet_engine(PipelineKind::Distilled, missing, fleet_options(2)), Error);
  test::require_clean();
}
