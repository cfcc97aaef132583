#include "common/run_request.h"

#include <csignal>

#include "common/clip_file.h"
#include "core/cuda/memory.h"
#include "core/error.h"
#include "runtime/stop_signal.h"

namespace ltx2::cli {

void stop_if_requested() {
  const int sig = runtime::stop_signal_number();
  LTX2_CHECK(sig == 0, "interrupted by {}; no output written", sig == SIGINT ? "SIGINT" : "SIGTERM");
}

RunResult run_request(pipeline::GenerationEngine& engine, const GenerationRequest& r, RunReporter* reporter,
                      Device memory_device) {
  const pipeline::OutputFormat format = engine.output_format(r);
  ClipFile file(r.output_path, format.frame_rate, format.audio_sample_rate, output_has_audio(r));
  PhaseClock clock(memory_device.is_cuda() ? std::function<double()>([&] {
    const CudaMemoryStats m = cuda_memory_stats(memory_device.index);
    cuda_reset_peak_memory(memory_device.index);
    return static_cast<double>(m.peak_allocated) / static_cast<double>(1ull << 30);
  })
                                           : std::function<double()>());
  const auto encode = [&](const auto& fn) {
    const double before = file.encode_seconds();
    fn();
    clock.add_encode_seconds(file.encode_seconds() - before);
  };
  pipeline::PipelineCallbacks cb;
  int num_frames = r.num_frames;  // --num-frames unset: the engine's prediction, before any frame
  cb.num_frames = [&](int n) { num_frames = n; };
  cb.progress = [&](const std::string& stage, int step, int steps) {
    stop_if_requested();
    clock.on_progress(stage, step, steps);
    if (reporter) reporter->progress(stage, step, steps);
  };
  cb.video_chunk = [&](const Tensor& frames) {
    stop_if_requested();
    encode([&] { file.add_frames(frames); });
    if (reporter) reporter->progress("decode", static_cast<int>(file.frames()) - 1, num_frames);
  };
  cb.audio = [&](const Tensor& wave, int64_t rate) { encode([&] { file.add_audio(wave, rate); }); };
  engine.generate(r, cb);
  clock.end_run();
  stop_if_requested();
  encode([&] { file.finish(); });
  return {file.frames(), file.width(), file.height(), clock.phases(), clock.total_seconds()};
}

}  // namespace ltx2::cli
