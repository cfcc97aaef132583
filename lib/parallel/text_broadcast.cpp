// Gemma and the duration head on rank 0, their contexts and count broadcast.
#include "parallel/text_broadcast.h"

#include <exception>

#include "core/error.h"
#include "pipeline/pipeline_models.h"

namespace ltx2::parallel {

std::vector<EncodedPrompt> BroadcastTextEncoder::encode(pipeline::PipelineModels& m,
                                                        const std::vector<std::string>& prompts,
                                                        const std::optional<EnhanceSettings>& enhance_first) {
  const auto n = static_cast<int64_t>(prompts.size());
  const bool root = comm_.rank() == 0;
  std::vector<EncodedPrompt> out(prompts.size());
  // Per context its dtype and shape (4 numbers), then whether rank 0 encoded (1) or failed (0).
  std::vector<int64_t> header(static_cast<size_t>(n) * 8 + 1, 0);
  std::exception_ptr failure;
  if (root) {
    try {
      m.acquire(pipeline::ModelPart::Text);
      out = m.text->encode(prompts, enhance_first);
      m.release(pipeline::ModelPart::Text);
      for (int64_t i = 0; i < n; ++i)
        for (int c = 0; c < 2; ++c) {
          const Tensor& t = c == 0 ? out[i].video_context : out[i].audio_context;
          LTX2_CHECK(t.dim() == 3, "text context {} is not [B, T, C]", t.str());
          int64_t* h = &header[static_cast<size_t>((i * 2 + c) * 4)];
          h[0] = static_cast<int64_t>(t.dtype());
          for (int d = 0; d < 3; ++d) h[d + 1] = t.size(d);
        }
      header.back() = 1;
    } catch (const Error&) {
      failure = std::current_exception();
    }
  }
  header = comm_.broadcast(Tensor::from_vector_i64(header, {n * 8 + 1}).to(comm_.device()), 0)
               .to(Device::cpu())
               .to_vector_i64();
  if (failure) std::rethrow_exception(failure);
  LTX2_CHECK(header.back() == 1, "rank 0's text encoder failed (its error says why)");
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 2; ++c) {
      const int64_t* h = &header[static_cast<size_t>((i * 2 + c) * 4)];
      Tensor& t = c == 0 ? out[i].video_context : out[i].audio_context;
      const Tensor send = root ? t.to(comm_.device())
                               : Tensor::empty({h[1], h[2], h[3]}, static_cast<DType>(h[0]), comm_.device());
      t = comm_.broadcast(send, 0).to(m.options.text_encoder_on_device ? m.options.device : Device::cpu());
    }
  if (!root)
    for (EncodedPrompt& e : out)
      e.context_mask = Tensor::full({1, e.video_context.size(1)}, 1.0f, DType::I64);
  return out;
}

int BroadcastDuration::num_frames(const DurationHead* head, const GenerationRequest& request,
                                  const Tensor& video_context, const Tensor& audio_context,
                                  const std::function<void(const Tensor&)>& probe_seconds) {
  // 0 (never a frame count) tells the other ranks that rank 0 failed.
  int64_t frames = 0;
  std::exception_ptr failure;
  if (comm_.rank() == 0) {
    try {
      frames = pipeline::resolve_num_frames(head, request, video_context, audio_context, probe_seconds);
    } catch (const Error&) {
      failure = std::current_exception();
    }
  }
  frames = comm_.broadcast(Tensor::from_vector_i64({frames}, {1}).to(comm_.device()), 0)
               .to(Device::cpu())
               .to_vector_i64()
               .at(0);
  if (failure) std::rethrow_exception(failure);
  LTX2_CHECK(frames > 0,
             "--num-frames unset: rank 0's duration head gave no frame count (its error says why)");
  return static_cast<int>(frames);
}

}  // namespace ltx2::parallel
