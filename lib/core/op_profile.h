// Per-op device time, for `ltx2 bench transformer --profile`. While an OpProfile records, every op
// dispatched to the CUDA table (ops/cuda_ops.h, through OpScope) and every GPU copy between
// tensors is bracketed by a pair of events on the device's stream. An op called inside another
// (say a copy inside attention) counts for the outer one only, so the entries add up to at most the
// forward's time. Each event pair adds its own launch to the stream: the profile says where the
// time goes, the plain timed runs say how long it takes. Off (the default) an OpScope costs one
// atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ltx2 {

class OpProfile {
 public:
  struct Entry {
    std::string op;
    int64_t calls = 0;
    double ms = 0;  // summed device time
  };
  // Makes `device` current and starts recording the ops this thread issues on it (for one-device
  // benchmarks; one OpProfile at a time in a process; a CPU-only build refuses).
  explicit OpProfile(int device);
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;
  // Stops recording, waits for the device, and returns each op's calls and time, largest first.
  std::vector<Entry> finish();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// The recording in progress (null: none).
OpProfile::State* active_op_profile();
void op_profile_begin(OpProfile::State* state, const char* op);
void op_profile_end(OpProfile::State* state);

// Brackets one op when a profile records; `op` must outlive the profile (a string literal).
class OpScope {
 public:
  explicit OpScope(const char* op) : state_(active_op_profile()) {
    if (state_) op_profile_begin(state_, op);
  }
  ~OpScope() {
    if (state_) op_profile_end(state_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  OpProfile::State* state_;
};

}  // namespace ltx2
