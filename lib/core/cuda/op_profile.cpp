// OpProfile on CUDA events (core/op_profile.h). Events come from a pool that grows to the largest
// forward seen and is reused, so a profiled forward creates no event after the first.
#include "core/op_profile.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <thread>

#include "core/cuda/check.h"

namespace ltx2 {

namespace {
std::atomic<OpProfile::State*> g_active{nullptr};
thread_local int t_depth = 0;  // nesting of OpScopes on this thread
}  // namespace

struct OpProfile::State {
  struct Record {
    const char* op;
    size_t start;  // index of the start event; the end event follows it
  };
  int device = 0;
  std::thread::id thread;  // the one thread whose ops are recorded
  std::vector<cudaEvent_t> events;
  size_t used = 0;
  std::vector<Record> records;

  size_t take_event() {
    if (used == events.size()) {
      cudaEvent_t e;
      LTX2_CUDA_CHECK(cudaEventCreate(&e));
      events.push_back(e);
    }
    return used++;
  }
};

OpProfile::OpProfile(int device) : state_(std::make_unique<State>()) {
  state_->device = device;
  state_->thread = std::this_thread::get_id();
  // Events belong to the device current when they are created and recorded.
  LTX2_CUDA_CHECK(cudaSetDevice(device));
  OpProfile::State* expected = nullptr;
  LTX2_CHECK(g_active.compare_exchange_strong(expected, state_.get()),
             "an op profile is already recording in this process");
}

OpProfile::~OpProfile() {
  OpProfile::State* mine = state_.get();
  g_active.compare_exchange_strong(mine, nullptr);
  for (cudaEvent_t e : state_->events) cudaEventDestroy(e);
}

std::vector<OpProfile::Entry> OpProfile::finish() {
  OpProfile::State* mine = state_.get();
  g_active.compare_exchange_strong(mine, nullptr);
  LTX2_CUDA_CHECK(cudaSetDevice(state_->device));
  LTX2_CUDA_CHECK(cudaDeviceSynchronize());
  std::map<std::string, Entry> by_op;
  for (const State::Record& r : state_->records) {
    float ms = 0;
    LTX2_CUDA_CHECK(cudaEventElapsedTime(&ms, state_->events[r.start], state_->events[r.start + 1]));
    Entry& e = by_op[r.op];
    e.op = r.op;
    ++e.calls;
    e.ms += ms;
  }
  std::vector<Entry> out;
  for (auto& [name, e] : by_op) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.ms > b.ms; });
  state_->records.clear();
  state_->used = 0;
  return out;
}

OpProfile::State* active_op_profile() {
  return g_active.load(std::memory_order_relaxed);
}

// Only the outermost scope of the recording thread records (other threads' ops are not timed);
// its start and end events are taken together, so the end event is the one after the start.
void op_profile_begin(OpProfile::State* s, const char* op) {
  if (std::this_thread::get_id() != s->thread || t_depth++ > 0) return;
  const size_t start = s->take_event();
  s->take_event();
  LTX2_CUDA_CHECK(cudaEventRecord(s->events[start], 0));
  s->records.push_back({op, start});
}

void op_profile_end(OpProfile::State* s) {
  if (std::this_thread::get_id() != s->thread || --t_depth > 0) return;
  LTX2_CUDA_CHECK(cudaEventRecord(s->events[s->records.back().start + 1], 0));
}

}  // namespace ltx2
