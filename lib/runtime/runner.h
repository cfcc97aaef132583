// The runner interface: what every rank of a fleet executes, in SPMD lockstep.
//
// A worker builds its runner by name from the registry (runners register themselves from the
// executable that defines them, e.g. a pipeline app or a test binary), calls setup(config) once,
// then run(job) for every job in order, on every rank. run() "yields" by calling the sink: each
// progress event and output (tensors such as VAE tiles or audio) is streamed to the driver at
// once; run()'s return value is the rank's terminal value.
//
// Errors a runner raises decide what happens to the fleet:
// - JobError, or any ltx2::Error that is not a comm::CommError (a bad input, a failed check): the
//   job fails with that message on this rank and the worker serves the next job. When every rank
//   fails the job is reported as a symmetric failure, otherwise as asymmetric.
// - anything else (std::exception, a CommError, a crash): the rank is dead; the driver tears the
//   fleet down (a desynchronised collective cannot be unwound) and may restart it and retry.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/comm_groups.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "runtime/record.h"

namespace ltx2::runtime {

// A runner's verdict that the job cannot be done (invalid input); the fleet keeps serving.
class JobError : public Error {
 public:
  using Error::Error;
};

#define LTX2_JOB_CHECK(cond, ...)                                                                 \
  do {                                                                                            \
    if (!(cond)) throw ::ltx2::runtime::JobError(::fmt::format(__VA_ARGS__), __FILE__, __LINE__); \
  } while (0)

struct Job {
  uint64_t id = 0;
  uint64_t attempt = 0;  // 0 the first time, n on the n-th retry after a fleet restart
  nlohmann::json params;
  std::vector<NamedTensor> tensors;

  const Tensor& tensor(const std::string& name) const;
};

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  // A progress event (stage name, fraction done in [0, 1]).
  virtual void progress(const std::string& stage, double fraction) = 0;
  // An output: a name, JSON data and tensors (CPU), streamed to the driver now.
  virtual void output(const std::string& name, const nlohmann::json& data,
                      std::vector<NamedTensor> tensors = {}) = 0;
  // Tells the driver this rank is getting on with the job without sending anything (a step done on
  // a rank that streams nothing); `doing` says what ("stage1 3/8"), for messages. progress() and
  // output() tell it too. A rank that tells nothing for the job's progress bound is declared stuck
  // (controller.h), so a runner marks every step and phase of its work.
  virtual void mark_progress(const std::string& doing) = 0;
};

struct RunnerContext {
  int rank = 0;
  int world_size = 1;
  Device device;                       // the device this rank owns (cpu, or cuda:k of the visible set)
  comm::Communicator* comm = nullptr;  // the collectives among the ranks, on `device`
  comm::CommGroups* groups = nullptr;  // the communicators of rank groups, on `device` (may be null)
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Once per worker, before it reports ready; ctx stays valid for the worker's lifetime.
  virtual void setup(const nlohmann::json& config, const RunnerContext& ctx) = 0;
  // Once per job on every rank; returns the terminal value of this rank.
  virtual nlohmann::json run(const Job& job, ResultSink& out) = 0;
};

using RunnerFactory = std::function<std::unique_ptr<Runner>()>;

// Registers a runner under `name` (call from a static initialiser; returns true so it can
// initialise a static bool). A second registration of one name throws.
bool register_runner(const std::string& name, RunnerFactory factory);
// Throws naming the runner and the known names when `name` is not registered.
std::unique_ptr<Runner> make_runner(const std::string& name);
bool runner_registered(const std::string& name);

}  // namespace ltx2::runtime
