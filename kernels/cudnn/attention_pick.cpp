// The run-time choice between the attention engines (attention_pick.h): per (device, shape,
// strides) both engines are timed once (after an untimed run of each: the wgmma kernel's first
// launch configures it, cuDNN's builds its plan), the median of three runs each decides, and the
// choice is logged once and cached for the rest of the process.
#include "kernels/cudnn/attention_pick.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <vector>

#include "core/cuda/events.h"
#include "core/log.h"
#include "kernels/cudnn/attention_cudnn.h"

namespace ltx2::cuda {

namespace {

constexpr int kTimedRuns = 3;

// device, B, H, Tq, Tk, D, then the strides of q, k and v.
using PickKey = std::array<int64_t, 18>;

PickKey pick_key(const Tensor& q, const Tensor& k, const Tensor& v) {
  PickKey key{q.device().index, q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  int i = 6;
  for (const Tensor* t : {&q, &k, &v})
    for (int d = 0; d < 4; ++d) key[i++] = t->stride(d);
  return key;
}

struct Picks {
  std::mutex mutex;
  std::map<PickKey, ops::AttentionEngine> engines;
  int64_t timings = 0;
};

Picks& picks() {
  static Picks* p = new Picks;  // never destroyed, like the engines' caches
  return *p;
}

float median_ms(int device, const std::function<void()>& fn) {
  std::vector<float> ms = cuda_time_each(device, kTimedRuns, fn);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

bool attention_by_cudnn(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale,
                        const std::function<void()>& run_wgmma) {
  const ops::AttentionEngine mode = ops::attention_engine();
  if (mode == ops::AttentionEngine::Wgmma) return false;
  if (mode == ops::AttentionEngine::Cudnn) return cudnn_attention(q, k, v, out, scale);

  Picks& p = picks();
  const PickKey key = pick_key(q, k, v);
  std::lock_guard<std::mutex> lock(p.mutex);
  auto found = p.engines.find(key);
  if (found != p.engines.end())
    return found->second == ops::AttentionEngine::Cudnn && cudnn_attention(q, k, v, out, scale);

  ops::AttentionEngine pick = ops::AttentionEngine::Wgmma;
  const int device = q.device().index;
  run_wgmma();
  if (cudnn_attention(q, k, v, out, scale)) {
    const float wgmma_ms = median_ms(device, run_wgmma);
    const float cudnn_ms = median_ms(device, [&] { cudnn_attention(q, k, v, out, scale); });
    pick = cudnn_ms < wgmma_ms ? ops::AttentionEngine::Cudnn : ops::AttentionEngine::Wgmma;
    ++p.timings;
    log_info("attention B{} H{} Tq{} Tk{} D{} on {}: wgmma {:.3f} ms, cuDNN {:.3f} ms; {} picked", q.size(0),
             q.size(1), q.size(2), k.size(2), q.size(3), q.device().str(), wgmma_ms, cudnn_ms,
             ops::attention_engine_name(pick));
  }
  p.engines.emplace(key, pick);
  return pick == ops::AttentionEngine::Cudnn && cudnn_attention(q, k, v, out, scale);
}

ops::AttentionEngine picked_attention_engine(const Tensor& q, const Tensor& k, const Tensor& v) {
  Picks& p = picks();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto found = p.engines.find(pick_key(q, k, v));
  return found == p.engines.end() ? ops::AttentionEngine::Auto : found->second;
}

int64_t attention_engine_timings() {
  Picks& p = picks();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.timings;
}

}  // namespace ltx2::cuda
