// Gemma and the duration head on rank 0, their contexts and count broadcast.
#include "parallel/text_broadcast.h"

#include <exception>
#include <functional>

#include "core/error.h"
#include "pipeline/pipeline_models.h"

namespace ltx2::parallel {

namespace {

// Runs `work` on rank 0, which fills `values`, and broadcasts them with rank 0's status, so that
// when `work` throws every rank throws: rank 0 its error, the others `failed` (one line); the job
// fails on all of them alike and no rank waits in a later collective.
std::vector<int64_t> broadcast_from_rank0(comm::Communicator& comm, std::vector<int64_t> values,
                                          const std::function<void(std::vector<int64_t>&)>& work,
                                          const char* failed) {
  const auto n = static_cast<int64_t>(values.size());
  values.push_back(0);  // 1: rank 0's work succeeded
  std::exception_ptr failure;
  if (comm.rank() == 0) {
    try {
      work(values);
      values.back() = 1;
    } catch (const Error&) {
      failure = std::current_exception();
    }
  }
  values = comm.broadcast(Tensor::from_vector_i64(values, {n + 1}).to(comm.device()), 0)
               .to(Device::cpu())
               .to_vector_i64();
  if (failure) std::rethrow_exception(failure);
  LTX2_CHECK(values.back() == 1, "{}", failed);
  values.pop_back();
  return values;
}

}  // namespace

std::vector<EncodedPrompt> BroadcastTextEncoder::encode(pipeline::PipelineModels& m,
                                                        const std::vector<std::string>& prompts,
                                                        const std::optional<EnhanceSettings>& enhance_first) {
  const auto n = static_cast<int64_t>(prompts.size());
  const bool root = comm_.rank() == 0;
  std::vector<EncodedPrompt> out(prompts.size());
  // Per context its dtype and shape (4 numbers).
  const std::vector<int64_t> header = broadcast_from_rank0(
      comm_, std::vector<int64_t>(static_cast<size_t>(n) * 8, 0),
      [&](std::vector<int64_t>& h) {
        m.acquire(pipeline::ModelPart::Text);
        out = m.text->encode(prompts, enhance_first);
        m.release(pipeline::ModelPart::Text);
        for (int64_t i = 0; i < n; ++i)
          for (int c = 0; c < 2; ++c) {
            const Tensor& t = c == 0 ? out[i].video_context : out[i].audio_context;
            LTX2_CHECK(t.dim() == 3, "text context {} is not [B, T, C]", t.str());
            int64_t* context = &h[static_cast<size_t>((i * 2 + c) * 4)];
            context[0] = static_cast<int64_t>(t.dtype());
            for (int d = 0; d < 3; ++d) context[d + 1] = t.size(d);
          }
      },
      "rank 0's text encoder failed (its error says why)");
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
  const std::vector<int64_t> frames = broadcast_from_rank0(
      comm_, {0},
      [&](std::vector<int64_t>& v) {
        v[0] = pipeline::resolve_num_frames(head, request, video_context, audio_context, probe_seconds);
      },
      "--num-frames unset: rank 0's duration head gave no frame count (its error says why)");
  return static_cast<int>(frames[0]);
}

}  // namespace ltx2::parallel
