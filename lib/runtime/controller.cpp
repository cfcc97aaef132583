// The driver-side fleet controller (behaviour in controller.h, protocol in channel.h).
#include "runtime/controller.h"

#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "comm/futex.h"
#include "core/log.h"
#include "runtime/launcher.h"
#include "runtime/nodes.h"
#include "runtime/shm_region.h"
#include "runtime/stop_signal.h"

namespace ltx2::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr auto kPoll = milliseconds(20);
// How long a worker may take from its spawn to its first heartbeat (see silent_rank).
constexpr int64_t kFirstBeatGraceMs = 10000;

int64_t ms_since(SteadyClock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(SteadyClock::now() - t).count();
}

// "300 ms", "2 s", "3600 s".
std::string duration_text(milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{} s", d.count() / 1000) : fmt::format("{} ms", d.count());
}

// A time point on monotonic_ns()'s scale (both are the steady clock).
uint64_t ns_of(SteadyClock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace

milliseconds default_progress_timeout(std::optional<milliseconds> job_timeout) {
  return job_timeout ? std::max(kMinProgressTimeout, *job_timeout / 10) : kMinProgressTimeout;
}

JobFailed::JobFailed(const std::string& message, uint64_t job_id, bool asymmetric,
                     std::vector<std::string> rank_errors)
    : Error(message, __FILE__, __LINE__),
      job_id_(job_id),
      asymmetric_(asymmetric),
      rank_errors_(std::move(rank_errors)) {}

FleetBroken::FleetBroken(const std::string& message, uint64_t job_id)
    : Error(message, __FILE__, __LINE__), job_id_(job_id) {}

// One generation of workers and its shared memory. Destroying it kills and reaps every worker
// still alive and releases the region (once no result view uses it any more).
struct Controller::Fleet {
  std::shared_ptr<ShmRegion> region;
  FleetChannel channel;
  std::vector<ResultReader> readers;  // one per rank
  std::vector<uint64_t> delivered;    // per rank: frames up to this number were handed to the caller
  // Per rank, see check_held_results: since when its producer has waited behind `frame`, a result
  // the caller holds.
  struct HeldStall {
    SteadyClock::time_point since;
    uint64_t frame = 0;
  };
  std::vector<std::optional<HeldStall>> stalled_since;
  std::vector<pid_t> pids;  // -1 once reaped (and for the ranks of other nodes)
  // Ranks [0, local_ranks) are this machine's processes; the others run on the other nodes
  // (nodes.h), which report their exits.
  RemoteNodes* nodes = nullptr;
  int local_ranks = 0;
  std::vector<bool> exited;
  std::vector<std::string> exit_text;  // per exited rank: "exited with code 3 (on node 1)"
  uint64_t spawned_ns = 0;             // monotonic_ns() as the workers were spawned: before its first beat a
                                       // worker is still starting (exec, attach), not silent
  uint64_t generation = 0;
  uint64_t next_seq = 1;

  ~Fleet() {
    kill_and_reap(pids);
    if (nodes) nodes->stop_fleet();
  }
  // Reaps exited workers without blocking (and takes the other nodes' reports); returns the ranks
  // that exited now.
  std::vector<int> reap_exited() {
    std::vector<int> out;
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      const pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        exit_text[r] = describe_wait_status(status);
        exited[r] = true;
        pids[r] = -1;
        out.push_back(static_cast<int>(r));
      }
    }
    if (nodes) {
      for (auto& [r, text] : nodes->take_exits()) {
        if (r < local_ranks || r >= static_cast<int>(exited.size()) || exited[r]) continue;
        exit_text[r] = text;
        exited[r] = true;
        out.push_back(r);
      }
    }
    return out;
  }
  bool all_exited() const {
    for (bool e : exited)
      if (!e) return false;
    return true;
  }
};

Controller::Controller(FleetOptions options) : opt_(std::move(options)) {
  LTX2_CHECK(!opt_.devices.empty(), "fleet: no devices given");
  LTX2_CHECK(static_cast<int>(opt_.devices.size()) <= kMaxRanks, "fleet: {} ranks exceed the maximum of {}",
             opt_.devices.size(), kMaxRanks);
  // One communicator spans the ranks: host shared memory for CPU ranks, the GPU engine (bootstrapped
  // by all of them) for GPU ranks; a fleet of both kinds could form neither.
  for (const Device& d : opt_.devices)
    LTX2_CHECK(d.is_cpu() == opt_.devices[0].is_cpu(),
               "fleet: rank 0 runs on {} and another on {}: a fleet's ranks are all CPU or all GPU",
               opt_.devices[0].str(), d.str());
  LTX2_CHECK(!opt_.runner.empty(), "fleet: no runner named");
  LTX2_CHECK(opt_.max_queued_jobs >= 1 && opt_.max_retries >= 0, "fleet: bad queue size or retry count");
  opt_.sizes.world = static_cast<int>(opt_.devices.size());
}

Controller::~Controller() {
  fleet_.reset();
}

std::vector<pid_t> Controller::worker_pids() const {
  return fleet_ ? fleet_->pids : std::vector<pid_t>{};
}

void Controller::interrupted() {
  fleet_.reset();
  throw Interrupted(fmt::format("stopped by signal {}; the fleet was killed", stop_signal_number()), __FILE__,
                    __LINE__);
}

void Controller::start() {
  LTX2_CHECK(!fleet_, "fleet: start() called while the fleet is running");
  stopped_reason_.clear();
  spawn_fleet();
  reset_jobs_for_new_fleet();
  post_jobs();
}

void Controller::spawn_fleet() {
  auto fleet = std::make_unique<Fleet>();
  // Across nodes (nodes.h) this machine runs the first world / nodes ranks, each other node its
  // share (their agents spawn them as the loop below does); rank groups stay inside a node.
  const int world = opt_.sizes.world;
  RemoteNodes* nodes = remote_nodes();
  if (nodes)
    LTX2_CHECK(world % nodes->nodes() == 0, "fleet: {} ranks do not split evenly over {} nodes", world,
               nodes->nodes());
  fleet->local_ranks = nodes ? world / nodes->nodes() : world;
  opt_.sizes.node_ranks = fleet->local_ranks;
  const std::string name = fmt::format("/{}-{}-{}", opt_.shm_prefix, getpid(), ++generation_);
  fleet->region =
      std::make_shared<ShmRegion>(ShmRegion::create(name, FleetChannel::region_bytes(opt_.sizes)));
  fleet->channel =
      FleetChannel::format(fleet->region->data(), fleet->region->size(), opt_.sizes,
                           EncodedRecord({{"runner", opt_.runner}, {"config", opt_.setup_config}}, {}),
                           opt_.heartbeat_interval, opt_.collective_timeout);
  fleet->generation = generation_;
  for (int r = 0; r < world; ++r) {
    fleet->channel.rank(r).device_type = static_cast<uint32_t>(opt_.devices[r].type);
    fleet->channel.rank(r).device_index = opt_.devices[r].index;
    fleet->readers.emplace_back(fleet->channel, r, fleet->region);
  }
  fleet->delivered.assign(world, 0);
  fleet->stalled_since.assign(world, std::nullopt);
  fleet->pids.assign(world, -1);
  fleet->exited.assign(world, false);
  fleet->exit_text.assign(world, "");
  fleet->spawned_ns = monotonic_ns();
  for (int r = 0; r < fleet->local_ranks; ++r) {
    fleet->pids[r] = spawn_worker(
        opt_.worker_exe, {"--worker", "--rank", std::to_string(r), "--driver-pid", std::to_string(getpid())},
        fleet->region->fd());
  }
  if (nodes) {
    NodeFleetSpec spec;
    spec.generation = generation_;
    spec.sizes = opt_.sizes;
    spec.runner = opt_.runner;
    spec.setup_config = opt_.setup_config;
    spec.devices = opt_.devices;
    spec.heartbeat_interval = opt_.heartbeat_interval;
    spec.heartbeat_timeout = opt_.heartbeat_timeout;
    spec.collective_timeout = opt_.collective_timeout;
    nodes->start_fleet(spec, fleet->region, fleet->channel);
    fleet->nodes = nodes;
  }
  fleet_ = std::move(fleet);
  try {
    wait_ready();
  } catch (...) {
    fleet_.reset();
    throw;
  }
  log_debug("fleet: {} ranks ready", world);
}

void Controller::wait_ready() {
  FleetChannel& ch = fleet_->channel;
  const auto begin = SteadyClock::now();
  const int world = ch.world();
  for (;;) {
    if (stop_requested()) interrupted();
    const uint32_t seen = ch.control().results_changed.load();
    std::vector<int> missing;
    for (int r = 0; r < world; ++r)
      if (ch.rank(r).state.load() != static_cast<uint32_t>(RankState::Ready)) missing.push_back(r);
    if (missing.empty()) return;
    for (int r : fleet_->reap_exited()) {
      const std::string err = ch.error_of(r);
      LTX2_FAIL("fleet start: rank {} (device {}) {}{}{}", r, opt_.devices[r].str(), fleet_->exit_text[r],
                err.empty() ? "" : ": ", err);
    }
    if (fleet_->nodes)
      if (auto lost = fleet_->nodes->lost_node()) LTX2_FAIL("fleet start: {}", *lost);
    if (auto silent = silent_rank()) LTX2_FAIL("fleet start: {}", *silent);
    if (ms_since(begin) >= opt_.ready_timeout.count()) {
      LTX2_FAIL("fleet start: rank(s) {} did not report ready within {} ms", fmt::join(missing, ", "),
                opt_.ready_timeout.count());
    }
    comm::futex_wait(&ch.control().results_changed, seen, kPoll);
  }
}

void Controller::reset_jobs_for_new_fleet() {
  for (auto& j : jobs_) {
    if (j.complete) continue;  // finished: its events are still to be delivered
    j.posted = false;
    j.complete = false;
    j.started.reset();
    j.terminals.assign(opt_.sizes.world, std::nullopt);
    j.events.clear();
  }
}

uint64_t Controller::submit(const nlohmann::json& params, std::vector<NamedTensor> tensors,
                            std::optional<milliseconds> timeout) {
  return enqueue(EncodedRecord(params, std::move(tensors)).bytes(), timeout);
}

uint64_t Controller::submit_record(std::vector<uint8_t> record, std::optional<milliseconds> timeout) {
  decode_record(record.data(), record.size(), "job record");  // rejects a corrupt record here
  return enqueue(std::move(record), timeout);
}

uint64_t Controller::enqueue(std::vector<uint8_t> record, std::optional<milliseconds> timeout) {
  LTX2_CHECK(jobs_.size() < opt_.max_queued_jobs,
             "fleet: the job queue is full ({} jobs); read results first", opt_.max_queued_jobs);
  const size_t capacity = opt_.sizes.job_capacity / 64 * 64;
  LTX2_CHECK(record.size() <= capacity, "fleet: job record of {} bytes exceeds the job slot of {} bytes",
             record.size(), capacity);
  // A rank that died while the fleet was idle is noticed before the job is posted, so the fleet
  // restarts (when retries are allowed) without the job ever meeting the dead rank.
  if (fleet_) poll_fleet();
  PendingJob job;
  job.id = next_job_id_++;
  job.record = std::move(record);
  job.timeout = timeout ? timeout : opt_.job_timeout;
  job.progress_timeout = opt_.progress_timeout.value_or(default_progress_timeout(job.timeout));
  job.terminals.assign(opt_.sizes.world, std::nullopt);
  jobs_.push_back(std::move(job));
  if (fleet_) post_jobs();
  return jobs_.back().id;
}

void Controller::post_jobs() {
  bool before_all_done = true;  // every earlier job is complete: this one is what the ranks run now
  for (auto& j : jobs_) {
    if (!j.posted) {
      if (!fleet_->channel.try_post_job(fleet_->next_seq, j.id, j.attempt, j.record)) return;
      j.posted = true;
      ++fleet_->next_seq;
    }
    if (before_all_done && !j.complete && !j.started) j.started = SteadyClock::now();
    before_all_done = before_all_done && j.complete;
  }
}

void Controller::drain_results() {
  for (int r = 0; r < opt_.sizes.world; ++r) {
    ResultReader& reader = fleet_->readers[r];
    const uint64_t end = reader.written();  // what is there now, not what keeps coming
    while (reader.read() < end) {
      auto rec = reader.pop();
      if (!rec) break;
      handle_result(r, reader.last_frame(), std::move(*rec));
    }
  }
}

void Controller::handle_result(int rank, uint64_t frame, Record rec) {
  const auto& m = rec.meta;
  LTX2_CHECK(m.contains("job_id") && m["job_id"].is_number_unsigned() && m.contains("type") &&
                 m["type"].is_string() && m.value("rank", -1) == rank,
             "corrupt result record from rank {}: {}", rank, m.dump());
  const uint64_t job_id = m["job_id"];
  size_t index = 0;
  while (index < jobs_.size() && (jobs_[index].complete || jobs_[index].terminals[rank])) ++index;
  LTX2_CHECK(index < jobs_.size() && jobs_[index].posted && jobs_[index].id == job_id,
             "fleet desync: rank {} sent a result for job {} while it should be on job {}", rank, job_id,
             index < jobs_.size() ? std::to_string(jobs_[index].id) : std::string("none"));
  PendingJob& job = jobs_[index];
  const std::string type = m["type"];
  if (type == "terminal") {
    job.terminals[rank] = Terminal{m.value("ok", false), m.value("data", nlohmann::json()),
                                   m.value("error", ""), m.value("collectives", uint64_t{0})};
    bool all = true;
    for (const auto& t : job.terminals) all = all && t.has_value();
    if (all) finalize(index);
    return;
  }
  JobEvent ev;
  LTX2_CHECK(type == "output" || type == "progress", "corrupt result record from rank {}: type '{}'", rank,
             type);
  ev.kind = type == "output" ? JobEvent::Kind::Output : JobEvent::Kind::Progress;
  ev.job_id = job_id;
  ev.rank = rank;
  ev.name = m.value("name", "");
  ev.data = m.value("data", nlohmann::json());
  ev.tensors = std::move(rec.tensors);
  job.events.emplace_back(std::move(ev), generation_, rank, frame);
}

void Controller::finalize(size_t index) {
  PendingJob& job = jobs_[index];
  job.complete = true;
  std::vector<std::string> errors;
  std::vector<int> failed;
  nlohmann::json values = nlohmann::json::array();
  for (size_t r = 0; r < job.terminals.size(); ++r) {
    errors.push_back(job.terminals[r]->ok ? std::string() : job.terminals[r]->error);
    if (!job.terminals[r]->ok) failed.push_back(static_cast<int>(r));
    values.push_back(job.terminals[r]->value);
  }
  if (index + 1 < jobs_.size() && jobs_[index + 1].posted) jobs_[index + 1].started = SteadyClock::now();
  if (failed.empty()) {
    JobEvent done;
    done.kind = JobEvent::Kind::Done;
    done.job_id = job.id;
    done.data = std::move(values);
    job.events.emplace_back(std::move(done));
    return;
  }
  const bool asymmetric = failed.size() != job.terminals.size();
  std::string message;
  if (asymmetric) {
    message = fmt::format(
        "job {} failed on rank(s) {} only (asymmetric; the other ranks finished; rank {} failed "
        "after {} collective(s)): {}",
        job.id, fmt::join(failed, ", "), failed[0], job.terminals[failed[0]]->collectives, errors[failed[0]]);
    log_error("{}", message);
  } else {
    message = fmt::format("job {} failed: {}", job.id, errors[0]);
  }
  job.events.emplace_back(std::make_exception_ptr(JobFailed(message, job.id, asymmetric, errors)));
}

std::optional<std::string> Controller::check_health() {
  FleetChannel& ch = fleet_->channel;
  std::vector<std::string> dead;
  for (int r : fleet_->reap_exited()) {
    const std::string err = ch.error_of(r);
    dead.push_back(fmt::format("rank {} (device {}) {}{}{}", r, opt_.devices[r].str(), fleet_->exit_text[r],
                               err.empty() ? "" : ": ", err));
  }
  if (!dead.empty()) return fmt::format("{}", fmt::join(dead, "; "));
  if (fleet_->nodes)
    if (auto lost = fleet_->nodes->lost_node()) return lost;
  if (auto silent = silent_rank()) return silent;
  if (auto stuck = stuck_rank()) return stuck;
  for (auto& j : jobs_) {
    if (j.complete) continue;
    if (j.started && j.timeout && ms_since(*j.started) > j.timeout->count()) {
      std::vector<int> running;
      for (size_t r = 0; r < j.terminals.size(); ++r)
        if (!j.terminals[r]) running.push_back(static_cast<int>(r));
      return fmt::format("job {} passed its timeout of {} (--job-timeout; rank(s) {} still running)", j.id,
                         duration_text(*j.timeout), fmt::join(running, ", "));
    }
    break;
  }
  return std::nullopt;
}

std::optional<std::string> Controller::silent_rank() const {
  const FleetChannel& ch = fleet_->channel;
  const uint64_t now = monotonic_ns();
  for (int r = 0; r < ch.world(); ++r) {
    const uint64_t beat = ch.rank(r).heartbeat_ns.load(std::memory_order_acquire);
    const uint64_t last = std::max(beat, fleet_->spawned_ns);
    const int64_t silent_ms = static_cast<int64_t>((now - std::min(now, last)) / 1000000);
    // Before its first beat a worker is still starting: exec, loading its libraries (CUDA's take
    // seconds) and attaching, slower still on a loaded machine, whatever heartbeat_timeout says.
    const int64_t bound_ms = beat == 0 ? std::max<int64_t>(opt_.heartbeat_timeout.count(), kFirstBeatGraceMs)
                                       : opt_.heartbeat_timeout.count();
    if (silent_ms > bound_ms)
      return fmt::format("rank {} sent no heartbeat for {} ms (last: {})", r, silent_ms, ch.activity_of(r));
  }
  return std::nullopt;
}

std::optional<std::string> Controller::stuck_rank() const {
  const auto running =
      std::find_if(jobs_.begin(), jobs_.end(), [](const PendingJob& j) { return !j.complete; });
  if (running == jobs_.end() || !running->started) return std::nullopt;
  const FleetChannel& ch = fleet_->channel;
  const uint64_t now = monotonic_ns(), started = ns_of(*running->started);
  int stuck = -1;
  uint64_t longest = 0;
  for (int r = 0; r < ch.world(); ++r) {
    if (running->terminals[r]) continue;  // done with this job: waiting for the others
    const uint64_t last = std::max(ch.rank(r).progress_ns.load(std::memory_order_acquire), started);
    const uint64_t silent = now - std::min(now, last);
    if (silent > longest) {
      longest = silent;
      stuck = r;
    }
  }
  const auto silent_ms = static_cast<int64_t>(longest / 1000000);
  if (stuck < 0 || silent_ms <= running->progress_timeout.count()) return std::nullopt;
  return fmt::format(
      "rank {} made no progress in job {} for {} ms while its heartbeats went on: its working thread is "
      "stuck (last: {}; the bound is {})",
      stuck, running->id, silent_ms, ch.activity_of(stuck), duration_text(running->progress_timeout));
}

void Controller::fail_fleet(const std::string& reason) {
  fleet_->channel.abort_comms("the driver declared the fleet broken");
  fleet_.reset();  // SIGKILL + reap every worker, release the shared memory
  size_t k = 0;
  while (k < jobs_.size() && jobs_[k].complete) ++k;
  if (k == jobs_.size()) {  // no job is affected: restart quietly if retries are allowed
    log_error("fleet broken while idle: {}", reason);
    stopped_reason_ = reason;
    if (opt_.max_retries > 0) {
      try {
        spawn_fleet();
        stopped_reason_.clear();
      } catch (const std::exception& e) {
        stopped_reason_ += std::string("; restarting it failed: ") + e.what();
      }
    }
    return;
  }
  PendingJob& job = jobs_[k];
  log_error("fleet broken during job {} (attempt {}): {}", job.id, job.attempt + 1, reason);
  std::string failure;
  if (static_cast<int>(job.attempt) >= opt_.max_retries) {
    failure = fmt::format("job {} failed: fleet broken: {}", job.id, reason);
  } else {
    try {
      spawn_fleet();
    } catch (const std::exception& e) {
      failure =
          fmt::format("job {} failed: fleet broken: {}; restarting it failed: {}", job.id, reason, e.what());
    }
  }
  reset_jobs_for_new_fleet();
  if (!failure.empty()) {  // delivered in order by next(); later jobs wait for start()
    stopped_reason_ = failure;
    job.complete = true;
    job.events.emplace_back(std::make_exception_ptr(FleetBroken(failure, job.id)));
    return;
  }
  ++job.attempt;
  JobEvent retry;
  retry.kind = JobEvent::Kind::Retry;
  retry.job_id = job.id;
  retry.data = {{"attempt", job.attempt}, {"reason", reason}};
  job.events.emplace_back(std::move(retry));
  post_jobs();
}

bool Controller::poll_fleet() {
  last_poll_ = SteadyClock::now();
  std::optional<std::string> broken;
  try {
    post_jobs();
    drain_results();
  } catch (const std::exception& e) {  // a corrupt or out-of-order result
    broken = e.what();
  }
  if (!broken) broken = check_health();
  if (!broken) return false;
  fail_fleet(*broken);
  return true;
}

std::optional<JobEvent> Controller::next(milliseconds wait) {
  const auto until = SteadyClock::now() + wait;
  for (;;) {
    if (stop_requested()) interrupted();
    // Polled at least every kPoll even while events are buffered, so a job that keeps streaming
    // still meets its timeout and a dead rank is still noticed.
    if (fleet_ && SteadyClock::now() - last_poll_ >= kPoll && poll_fleet()) continue;
    while (!jobs_.empty()) {
      PendingJob& front = jobs_.front();
      if (!front.events.empty()) {
        note_delivered(front.events.front());
        Item item = std::move(front.events.front().item);
        front.events.pop_front();
        if (front.complete && front.events.empty()) jobs_.pop_front();
        if (auto* e = std::get_if<std::exception_ptr>(&item)) std::rethrow_exception(*e);
        return std::get<JobEvent>(std::move(item));
      }
      if (!front.complete) break;
      jobs_.pop_front();
    }
    LTX2_CHECK(!jobs_.empty(), "fleet: next() called with no job submitted");
    LTX2_CHECK(fleet_ != nullptr, "fleet: not running; call start(){}",
               stopped_reason_.empty() ? "" : " (it broke: " + stopped_reason_ + ")");
    const uint32_t seen = fleet_->channel.control().results_changed.load(std::memory_order_acquire);
    if (poll_fleet() || !jobs_.front().events.empty()) continue;
    check_held_results();
    const auto now = SteadyClock::now();
    if (now >= until) return std::nullopt;
    comm::futex_wait(&fleet_->channel.control().results_changed, seen,
                     std::min<SteadyClock::duration>(until - now, kPoll));
  }
}

void Controller::note_delivered(const Queued& q) {
  if (!fleet_ || q.rank < 0 || q.generation != fleet_->generation) return;
  uint64_t& d = fleet_->delivered[static_cast<size_t>(q.rank)];
  d = std::max(d, q.frame + 1);
}

void Controller::check_held_results() {
  for (int r = 0; r < opt_.sizes.world; ++r) {
    const ResultReader& reader = fleet_->readers[r];
    auto& stall = fleet_->stalled_since[r];
    // The tail cannot pass the oldest held frame; when the caller holds it, only the caller can
    // make room for a producer that is waiting. The clock runs while the same frame blocks it: a
    // caller that drops its frames and keeps only newer ones (a starved producer may not have
    // noticed the room yet) is getting on.
    const uint64_t oldest = reader.oldest_held_frame();
    if (reader.producer_waiting_for() == 0 || oldest >= fleet_->delivered[r]) {
      stall.reset();
      continue;
    }
    if (!stall || stall->frame != oldest) stall = Fleet::HeldStall{SteadyClock::now(), oldest};
    LTX2_CHECK(ms_since(stall->since) < opt_.held_results_timeout.count(),
               "fleet: rank {} has waited {} ms for result ring space that only result tensors you still "
               "hold can free ({} bytes reserved of the ring): drop them, or clone() the ones to keep",
               r, ms_since(stall->since), reader.reserved_bytes());
  }
}

void Controller::shutdown() {
  if (!fleet_) return;
  ControlBlock& cb = fleet_->channel.control();
  cb.shutdown.store(1, std::memory_order_release);
  comm::bump_and_wake(&cb.jobs_changed);
  comm::bump_and_wake(&cb.ring_space);
  const auto begin = SteadyClock::now();
  while (!stop_requested() && ms_since(begin) < opt_.graceful_timeout.count()) {
    const uint32_t seen = cb.results_changed.load();
    fleet_->reap_exited();
    if (fleet_->all_exited()) break;
    comm::futex_wait(&cb.results_changed, seen, milliseconds(5));
  }
  fleet_.reset();
  reset_jobs_for_new_fleet();
}

}  // namespace ltx2::runtime
