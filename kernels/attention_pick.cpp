// The run-time choice between the attention engines (attention_pick.h): per (device, shape,
// strides) every candidate is timed once (after an untimed run of each: a kernel's first launch
// configures it, cuDNN's builds its plan), the median of three runs each decides, and the choice
// is logged once and cached for the rest of the process.
#include "kernels/attention_pick.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <string>

#include "core/cuda/events.h"
#include "core/error.h"
#include "core/log.h"

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

const char* display_name(ops::AttentionEngine engine) {
  return engine == ops::AttentionEngine::Cudnn ? "cuDNN" : ops::attention_engine_name(engine);
}

// Runs `engine` when it is a candidate and can take the call; else the wgmma kernel.
ops::AttentionEngine run_or_wgmma(ops::AttentionEngine engine,
                                  const std::vector<AttentionCandidate>& candidates) {
  for (const AttentionCandidate& c : candidates)
    if (c.engine == engine && c.engine != ops::AttentionEngine::Wgmma && c.run()) return engine;
  candidates.front().run();
  return ops::AttentionEngine::Wgmma;
}

}  // namespace

ops::AttentionEngine run_attention_engine(const Tensor& q, const Tensor& k, const Tensor& v,
                                          const std::vector<AttentionCandidate>& candidates) {
  LTX2_CHECK(!candidates.empty() && candidates.front().engine == ops::AttentionEngine::Wgmma,
             "attention: the wgmma kernel must be the first engine candidate");
  const ops::AttentionEngine mode = ops::attention_engine();
  if (mode != ops::AttentionEngine::Auto || candidates.size() == 1) return run_or_wgmma(mode, candidates);

  Picks& p = picks();
  const PickKey key = pick_key(q, k, v);
  std::lock_guard<std::mutex> lock(p.mutex);
  auto found = p.engines.find(key);
  if (found != p.engines.end()) return run_or_wgmma(found->second, candidates);

  std::vector<const AttentionCandidate*> able;
  for (const AttentionCandidate& c : candidates)
    if (c.run()) able.push_back(&c);
  ops::AttentionEngine pick = ops::AttentionEngine::Wgmma;
  if (able.size() > 1) {
    const int device = q.device().index;
    float best = 0.f;
    std::string times;
    for (const AttentionCandidate* c : able) {
      const float ms = median_ms(device, [&] { c->run(); });
      times += fmt::format("{}{} {:.3f} ms", times.empty() ? "" : ", ", display_name(c->engine), ms);
      if (c == able.front() || ms < best) {
        best = ms;
        pick = c->engine;
      }
    }
    ++p.timings;
    log_info("attention B{} H{} Tq{} Tk{} D{} on {}: {}; {} picked", q.size(0), q.size(1), q.size(2),
             k.size(2), q.size(3), q.device().str(), times, ops::attention_engine_name(pick));
  }
  p.engines.emplace(key, pick);
  return run_or_wgmma(pick, candidates);
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
