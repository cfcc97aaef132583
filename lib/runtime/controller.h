// Controller: the driver's handle on a fleet of worker processes (one per GPU or CPU rank).
//
// start() spawns the workers (launcher.h), which set up the runner and report ready; submit()
// queues jobs (bounded; several may wait, they run one at a time in order on every rank);
// next() streams the events of the oldest unfinished job as the ranks produce them; shutdown()
// stops the fleet (graceful, then forced). Single-threaded: call it from one thread, the one that
// called start() (workers die with that thread, see launcher.h).
//
// What can go wrong, and what the caller sees (the reference's taxonomy, with recovery added):
// - a job fails on every rank (JobError / ltx2::Error in the runner): next() throws JobFailed
//   (symmetric); the fleet keeps serving the next job.
// - it fails on some ranks while the others finish: JobFailed with asymmetric() true, logged as an
//   error; the fleet keeps serving (every rank reached its terminal, so nothing is left blocked).
// - a worker dies or exits, throws an unexpected exception, a collective times out, heartbeats
//   stop, a rank makes no progress within the job's progress bound (see Liveness), a result is
//   corrupt or out of order, or the job passes its timeout: the fleet is broken.
//   Every worker is SIGKILLed and reaped and the shared memory is released at once. If the job has
//   retries left the fleet is restarted, the job and those queued behind it are re-posted and
//   next() yields a Retry event (drop what that job streamed so far); otherwise next() throws
//   FleetBroken, the job is dropped, and start() may be called again for the queued ones.
// - the fleet breaks while no job is running: it is restarted at once if retries are allowed,
//   else stopped (next() then says why).
// - SIGINT/SIGTERM (stop_signal.h): the fleet is killed and reaped, next() throws Interrupted.
// Liveness: each worker has two signs of life. Its heartbeat thread beats every heartbeat_interval
// (silent for heartbeat_timeout: the process is frozen, or gone), but a thread of its own beats
// on while the working thread is stuck (reading a FIFO given as an image, a hung filesystem, a
// CUDA hang). So the working thread also notes progress (channel.h: at setup, when it picks up a
// job, at each step and phase its runner marks, each result it sends, while it waits for ring
// space), and a rank that runs a job and notes none for the job's progress bound is stuck: the
// fleet breaks naming it and what it did last. The bound is FleetOptions::progress_timeout, by
// default default_progress_timeout(the job's timeout). Setup is bounded by ready_timeout instead.
// Better than the reference: no poisoned controller (restart instead), a job queue, per-job and
// default timeouts checked continuously (not only while idle), heartbeats, and the shm name is
// removed the moment the object exists (workers inherit a descriptor), so even a SIGKILLed driver
// leaves nothing behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/error.h"
#include "runtime/channel.h"
#include "runtime/record.h"
#include "runtime/result_reader.h"

namespace ltx2::runtime {

struct FleetOptions {
  std::vector<Device> devices;  // one worker per entry (plan_devices)
  std::string runner;           // registered runner name, made in every worker
  nlohmann::json setup_config = nlohmann::json::object();
  std::string worker_exe = "/proc/self/exe";
  std::string shm_prefix = "ltx2-fleet";  // transient names /<prefix>-<driver pid>-<generation>
  ChannelSizes sizes;                     // sizes.world is set from devices
  size_t max_queued_jobs = 16;
  std::chrono::milliseconds ready_timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds heartbeat_interval{200};
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds graceful_timeout{std::chrono::seconds(10)};
  std::optional<std::chrono::milliseconds> job_timeout;  // default for jobs submitted without one
  // The longest a rank running a job may go without noting progress (see Liveness); unset:
  // default_progress_timeout(the job's timeout).
  std::optional<std::chrono::milliseconds> progress_timeout;
  int max_retries = 0;                                   // fleet restarts per job after a fatal error
  // How long a rank may wait for ring space that only result tensors the caller still holds can
  // free before next() throws (see JobEvent::tensors).
  std::chrono::milliseconds held_results_timeout{std::chrono::seconds(10)};
};

// The progress bound of a job: a tenth of its timeout, and at least kMinProgressTimeout (10
// minutes; the same without a timeout). Why: the longest time between two progress notes is one
// step, phase or result of the job, and a job has many; a full-size step on an H200 takes 1-3 s,
// a per-phase model load from a cold page cache some 10 s, a tiny model's CPU step milliseconds,
// so ten minutes leaves a wide margin. A job that is given hours (a full-size model on CPU ranks,
// where one step can take hours) gets a tenth of them per step.
constexpr std::chrono::milliseconds kMinProgressTimeout = std::chrono::minutes(10);
std::chrono::milliseconds default_progress_timeout(std::optional<std::chrono::milliseconds> job_timeout);

struct JobEvent {
  enum class Kind { Progress, Output, Retry, Done };
  Kind kind = Kind::Output;
  uint64_t job_id = 0;
  int rank = -1;        // the rank that produced it (-1 for Retry and Done)
  std::string name;     // progress stage or output name
  nlohmann::json data;  // output data; progress {"fraction"}; Retry {"attempt", "reason"};
                        // Done: the per-rank terminal values, in rank order
  // Zero-copy views into the rank's result ring (result_reader.h): the ring space comes back when
  // the last view of the event is dropped. Drop them soon or clone() what you keep: views held
  // while a rank streams more than its ring holds stall that rank, and after
  // held_results_timeout next() throws saying so (the fleet stays up).
  std::vector<NamedTensor> tensors;
};

// A job failed in the runner on every rank (symmetric) or on some (asymmetric). The fleet is fine.
class JobFailed : public Error {
 public:
  JobFailed(const std::string& message, uint64_t job_id, bool asymmetric,
            std::vector<std::string> rank_errors);
  uint64_t job_id() const { return job_id_; }
  bool asymmetric() const { return asymmetric_; }
  // Per rank: its error message, empty for a rank that finished cleanly.
  const std::vector<std::string>& rank_errors() const { return rank_errors_; }

 private:
  uint64_t job_id_;
  bool asymmetric_;
  std::vector<std::string> rank_errors_;
};

// The fleet broke and the job ran out of retries; the fleet is stopped.
class FleetBroken : public Error {
 public:
  FleetBroken(const std::string& message, uint64_t job_id);
  uint64_t job_id() const { return job_id_; }

 private:
  uint64_t job_id_;
};

// SIGINT/SIGTERM arrived; the fleet is stopped.
class Interrupted : public Error {
 public:
  using Error::Error;
};

class Controller {
 public:
  explicit Controller(FleetOptions options);
  ~Controller();  // kills and reaps a running fleet
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Spawns the workers and waits until every rank is ready (or throws naming the ranks that did
  // not come up, after killing the others): a rank that exits is reported at once, one whose
  // heartbeats stop after heartbeat_timeout, one that beats but never gets ready after
  // ready_timeout. Re-posts any jobs still queued.
  void start();
  bool running() const { return fleet_ != nullptr; }
  // Queues a job; returns its id (ids increase for the controller's lifetime). Throws when the
  // queue is full or the record does not fit a job slot.
  uint64_t submit(const nlohmann::json& params, std::vector<NamedTensor> tensors = {},
                  std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Queues a pre-encoded job record (e.g. replayed from a file); a corrupt one is rejected with an
  // ltx2::Error naming the fault and nothing is queued.
  uint64_t submit_record(std::vector<uint8_t> record,
                         std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // The next event of the oldest unfinished job, waiting at most `wait`; nullopt if none came.
  // Throws JobFailed, FleetBroken or Interrupted as described above.
  std::optional<JobEvent> next(std::chrono::milliseconds wait);
  // Asks the workers to exit after their current job, waits up to graceful_timeout, then kills and
  // reaps the rest. Unfinished jobs stay queued for a later start().
  void shutdown();

  size_t unfinished_jobs() const { return jobs_.size(); }
  std::vector<pid_t> worker_pids() const;

 private:
  struct Terminal {
    bool ok = false;
    nlohmann::json value;
    std::string error;
    uint64_t collectives = 0;  // collectives the rank entered during the job
  };
  using Item = std::variant<JobEvent, std::exception_ptr>;
  // An item queued for next(); events read from a result ring remember their fleet generation,
  // rank and frame number, so delivering one tells which ring frames the caller holds.
  struct Queued {
    template <typename T>  // a JobEvent or an exception_ptr, built in place
    explicit Queued(T&& i, uint64_t gen = 0, int r = -1, uint64_t f = 0)
        : item(std::forward<T>(i)), generation(gen), rank(r), frame(f) {}
    Item item;
    uint64_t generation;
    int rank;
    uint64_t frame;
  };
  struct PendingJob {
    uint64_t id = 0;
    std::vector<uint8_t> record;
    std::optional<std::chrono::milliseconds> timeout;
    std::chrono::milliseconds progress_timeout{};
    uint64_t attempt = 0;
    bool posted = false, complete = false;
    std::optional<std::chrono::steady_clock::time_point> started;  // when it became the job the ranks run
    std::vector<std::optional<Terminal>> terminals;
    std::deque<Queued> events;
  };
  struct Fleet;

  uint64_t enqueue(std::vector<uint8_t> record, std::optional<std::chrono::milliseconds> timeout);
  void spawn_fleet();
  void wait_ready();
  void post_jobs();
  void drain_results();
  void handle_result(int rank, uint64_t frame, Record rec);
  void note_delivered(const Queued& q);
  // Throws when a rank has waited longer than held_results_timeout for ring space that only
  // result views held by the caller can free.
  void check_held_results();
  void finalize(size_t index);
  std::optional<std::string> check_health();
  // The first rank whose heartbeats stopped for longer than heartbeat_timeout, described; nullopt
  // when every rank beats. Until its first beat a rank's silence counts from the spawn and may last
  // up to 10 s (starting a process takes that long on a loaded machine) or heartbeat_timeout.
  std::optional<std::string> silent_rank() const;
  // The rank running the current job that has noted no progress for longest, when that is longer
  // than the job's progress bound, described; nullopt otherwise.
  std::optional<std::string> stuck_rank() const;
  // Posts, drains and checks health; on a fatal error fails the fleet and returns true.
  bool poll_fleet();
  void fail_fleet(const std::string& reason);
  void reset_jobs_for_new_fleet();
  [[noreturn]] void interrupted();

  FleetOptions opt_;
  std::unique_ptr<Fleet> fleet_;
  std::deque<PendingJob> jobs_;
  uint64_t next_job_id_ = 1;
  uint64_t generation_ = 0;
  std::chrono::steady_clock::time_point last_poll_{};
  std::string stopped_reason_;  // why the fleet stopped on its own, for "not running" errors
};

}  // namespace ltx2::runtime
