// Check runner for "duration_head" cases: LTX-2.5's DurationHead on the case's weights and the
// prompt contexts of case.json "inputs_from" (another case's io), the seconds from video and audio,
// video alone and audio alone, and the reference DurationPredictor's frame counts ("frames", by fps).
#include "core/error.h"
#include "golden/kinds.h"
#include "io/safetensors.h"
#include "models/duration/duration_head.h"

namespace ltx2::golden {
namespace {

void run_duration_head(const GoldenCase& c, Report& report) {
  const nlohmann::json& s = c.spec();
  const Tolerance tol = parse_tolerance(s.at("tolerance"));
  const nlohmann::json& from = s.at("inputs_from");
  auto io = SafetensorsFile::open(c.path("../" + from.at("case").get<std::string>() + "/io.safetensors"));
  const Tensor video = io->read(from.at("video_tokens").get<std::string>()).to(DType::F32);
  const Tensor audio = io->read(from.at("audio_tokens").get<std::string>()).to(DType::F32);
  const DurationHead head(c.weights());
  const Tensor seconds = head.seconds(video, audio);
  report.check("out.seconds", seconds, c.tensor("out.seconds"), tol);
  report.check("out.seconds_video_only", head.seconds(video, Tensor()), c.tensor("out.seconds_video_only"),
               tol);
  report.check("out.seconds_audio_only", head.seconds(Tensor(), audio), c.tensor("out.seconds_audio_only"),
               tol);
  for (const auto& [fps, frames] : s.at("frames").items()) {
    const int64_t got =
        duration_to_frames(seconds.to_vector().at(0), std::stod(fps), s.at("min_seconds").get<double>(),
                           s.at("max_seconds").get<double>());
    report.check("frames at " + fps + " fps", Tensor::from_vector({static_cast<float>(got)}, {1}),
                 Tensor::from_vector({frames.get<float>()}, {1}), parse_tolerance("exact"));
  }
}

const bool registered = register_kind_runner("duration_head", &run_duration_head);

}  // namespace
}  // namespace ltx2::golden
