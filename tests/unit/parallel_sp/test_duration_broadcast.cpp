// The fleet's duration executor on forked ranks: rank 0's duration head predicts the frame count of a
// request with --num-frames unset and every rank gets that count (the others with no head and no
// contexts of their own); a prediction that fails on rank 0 fails the job on every rank. The text
// encoder's broadcast fails the same way when rank 0's encoding throws. A process without the text
// encoder (a fleet's other ranks) does not load the head.
#include <fmt/format.h>

#include <cstring>

#include "forked_ranks.h"
#include "models/duration/duration_head.h"
#include "parallel/text_broadcast.h"
#include "pipeline/pipeline_models.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

// LTX-2.5's tiny duration head (pipeline_distilled_25) and contexts of its widths.
struct HeadInputs {
  std::unique_ptr<DurationHead> head;
  Tensor video, audio;
};

HeadInputs head_inputs() {
  const auto set =
      WeightSet::open({test::golden_dir("pipeline_distilled_25") + "/duration_head.safetensors"});
  HeadInputs in{std::make_unique<DurationHead>(set), {}, {}};
  const DurationHeadConfig& c = in.head->config();
  in.video = test::random_tensor({1, 7, c.video_dim}, 5);
  in.audio = test::random_tensor({1, 7, c.audio_dim}, 6);
  return in;
}

GenerationRequest unset_request() {
  GenerationRequest r;
  r.num_frames = kNumFramesFromDurationHead;
  r.frame_rate = 8;
  return r;
}

// Runs the broadcasting executor on `world` ranks, the head and contexts on rank 0 only; each
// rank returns its count (0 when it threw), how often its probe was called and what it threw as
// text. The error is caught in the body, as a fleet's worker reports a job's error without aborting
// the communicator (a throwing body would abort it, racing the peers still in the broadcast).
std::vector<test::RankResult> run_broadcast(int world, const GenerationRequest& r, bool root_has_head) {
  return test::run_forked_ranks(world, [&](comm::Communicator& c) {
    HeadInputs in;
    if (c.rank() == 0 && root_has_head) in = head_inputs();
    int64_t frames = 0, probes = 0;
    std::string error;
    parallel::BroadcastDuration duration(c);
    try {
      frames = duration.num_frames(in.head.get(), r, in.video, in.audio, [&](const Tensor&) { ++probes; });
    } catch (const Error& e) {
      error = e.what();
    }
    Tensor text = Tensor::empty({static_cast<int64_t>(error.size())}, DType::U8);
    std::memcpy(text.data_ptr(), error.data(), error.size());
    return test::RankTensors{{"frames", Tensor::from_vector_i64({frames}, {1})},
                             {"probes", Tensor::from_vector_i64({probes}, {1})},
                             {"error", text}};
  });
}

std::string error_of(const test::RankResult& rank) {
  REQUIRE(rank.error.empty());
  const Tensor& t = rank.tensors.at("error");
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()));
}

}  // namespace

TEST_CASE("duration broadcast: every rank gets rank 0's predicted frame count, on 1 to 3 ranks") {
  const HeadInputs in = head_inputs();
  const GenerationRequest r = unset_request();
  const int expected = pipeline::resolve_num_frames(in.head.get(), r, in.video, in.audio);
  REQUIRE(expected > 0);
  REQUIRE((expected - 1) % 8 == 0);
  for (int world = 1; world <= 3; ++world) {
    INFO("world " << world);
    const auto ranks = run_broadcast(world, r, true);
    for (int rank = 0; rank < world; ++rank) {
      INFO("rank " << rank << ": " << ranks[rank].error);
      REQUIRE(error_of(ranks[rank]).empty());
      REQUIRE(ranks[rank].tensors.at("frames").to_vector_i64() == std::vector<int64_t>{expected});
      // Only rank 0 runs the head (and probes its seconds).
      REQUIRE(ranks[rank].tensors.at("probes").to_vector_i64() == std::vector<int64_t>{rank == 0 ? 1 : 0});
    }
  }
}

TEST_CASE("duration broadcast: a prediction that fails on rank 0 fails on every rank, rank 0 saying why") {
  const HeadInputs in = head_inputs();
  GenerationRequest r = unset_request();
  const int predicted = pipeline::resolve_num_frames(in.head.get(), r, in.video, in.audio);
  SECTION("an image past the predicted length") {
    r.images.push_back({"cond.png", predicted});
    const auto ranks = run_broadcast(2, r, true);
    REQUIRE_THAT(error_of(ranks[0]),
                 Contains(fmt::format("--image cond.png: frame {} is outside the video's {} "
                                      "frames (--num-frames unset",
                                      predicted, predicted)));
    REQUIRE_THAT(error_of(ranks[1]), Contains("rank 0's duration head gave no frame count"));
  }
  SECTION("no duration head") {
    const auto ranks = run_broadcast(2, r, false);
    REQUIRE_THAT(error_of(ranks[0]), Contains("--num-frames is required: the model has no duration head"));
    REQUIRE_THAT(error_of(ranks[1]), Contains("rank 0's duration head gave no frame count"));
  }
}

TEST_CASE("text broadcast: an encoding that fails on rank 0 fails on every rank, rank 0 saying why") {
  const auto ranks = test::run_forked_ranks(2, [](comm::Communicator& c) {
    pipeline::PipelineModels m;
    m.options.load_text_encoder = false;  // rank 0's encoding throws: no text encoder in this process
    std::string error;
    parallel::BroadcastTextEncoder text(c);
    try {
      text.encode(m, {"a prompt"}, std::nullopt);
    } catch (const Error& e) {
      error = e.what();
    }
    Tensor t = Tensor::empty({static_cast<int64_t>(error.size())}, DType::U8);
    std::memcpy(t.data_ptr(), error.data(), error.size());
    return test::RankTensors{{"error", t}};
  });
  REQUIRE_THAT(error_of(ranks[0]), Contains("the text encoder is not loaded in this process"));
  REQUIRE_THAT(error_of(ranks[1]), Contains("rank 0's text encoder failed (its error says why)"));
}

TEST_CASE("duration broadcast: only a process that loads the text encoder loads the duration head") {
  ModelPaths paths = test::diffusion_decoder_set_paths();
  paths.duration_head = test::golden_dir("pipeline_distilled_25") + "/duration_head.safetensors";
  for (bool text : {true, false}) {
    INFO("load_text_encoder " << text);
    pipeline::PipelineOptions options;
    options.load_text_encoder = text;
    const auto models = pipeline::PipelineModels::load(paths, PipelineKind::Distilled, options);
    CHECK((models->duration_head != nullptr) == text);
  }
}
