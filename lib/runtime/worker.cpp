// The worker loop (see worker.h and, for the shared-memory protocol, channel.h).
#include "runtime/worker.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "comm/device_comm.h"
#include "comm/futex.h"
#include "comm/shm_comm_set.h"
#include "comm/shm_communicator.h"
#include "core/cpu.h"
#include "core/log.h"
#include "runtime/channel.h"
#ifdef LTX2_WITH_MPI
#include "runtime/mpi/node_link.h"
#endif
#include "runtime/runner.h"
#include "runtime/shm_region.h"

namespace ltx2::runtime {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(100);

struct WorkerArgs {
  int rank = -1;
  pid_t driver = 0;
};

bool parse_args(int argc, char** argv, WorkerArgs* out) {
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--rank")
      out->rank = std::atoi(value.c_str());
    else if (key == "--driver-pid")
      out->driver = static_cast<pid_t>(std::atoi(value.c_str()));
    else
      return false;
  }
  return out->rank >= 0 && out->driver > 0 && argc % 2 == 0;
}

// Streams a job's events into the rank's result ring, tagged with job id and rank, and notes each
// one as progress (the driver's liveness check, controller.h), waiting for ring space included: a
// rank waiting for the driver is not stuck.
class RingSink : public ResultSink {
 public:
  RingSink(FleetChannel& ch, int rank, uint64_t job_id, std::function<bool()> keep_waiting)
      : ch_(ch), rank_(rank), job_id_(job_id), keep_waiting_(std::move(keep_waiting)) {}

  void progress(const std::string& stage, double fraction) override {
    push({{"type", "progress"}, {"name", stage}, {"data", {{"fraction", fraction}}}}, {});
  }
  void output(const std::string& name, const nlohmann::json& data,
              std::vector<NamedTensor> tensors) override {
    push({{"type", "output"}, {"name", name}, {"data", data}}, std::move(tensors));
  }
  void mark_progress(const std::string& doing) override { note(doing); }
  void terminal(bool ok, const nlohmann::json& value, const std::string& error, uint64_t collectives) {
    push({{"type", "terminal"}, {"ok", ok}, {"data", value}, {"error", error}, {"collectives", collectives}},
         {});
  }

 private:
  void note(const std::string& doing) { ch_.note_progress(rank_, fmt::format("job {}: {}", job_id_, doing)); }

  void push(nlohmann::json meta, std::vector<NamedTensor> tensors) {
    const std::string name = meta.value("name", "");
    const std::string sent = "sent " + meta["type"].get<std::string>() + (name.empty() ? "" : " " + name);
    meta["job_id"] = job_id_;
    meta["rank"] = rank_;
    ch_.push_result(rank_, EncodedRecord(meta, std::move(tensors)), [this] {
      note("waiting for result ring space");
      return keep_waiting_();
    });
    note(sent);
  }
  FleetChannel& ch_;
  int rank_;
  uint64_t job_id_;
  std::function<bool()> keep_waiting_;
};

class Worker {
 public:
  Worker(const WorkerArgs& args, FleetChannel ch) : args_(args), ch_(ch), me_(ch.rank(args.rank)) {}

  int run() {
    me_.heartbeat_ns.store(monotonic_ns());
    std::thread heartbeat([this] { beat(); });
    const int rc = serve();
    stop_heartbeat_.store(true);
    heartbeat.join();
    return rc;
  }

 private:
  bool driver_alive() const { return getppid() == args_.driver; }
  bool keep_waiting() const { return driver_alive() && ch_.control().shutdown.load() == 0; }

  void beat() {
    const auto interval =
        std::chrono::milliseconds(std::max<uint64_t>(1, ch_.control().heartbeat_interval_ms));
    while (!stop_heartbeat_.load()) {
      me_.heartbeat_ns.store(monotonic_ns(), std::memory_order_release);
      std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(interval, kPollInterval));
    }
  }

  void set_state(RankState s) {
    me_.state.store(static_cast<uint32_t>(s), std::memory_order_release);
    comm::bump_and_wake(&ch_.control().results_changed);
  }

  int fail(const std::string& message) {
    log_error("{}", message);
    ch_.record_error(args_.rank, message);
    ch_.abort_comms("rank " + std::to_string(args_.rank) + " failed: " + message);
    set_state(RankState::Failed);
    return 3;
  }

  int serve() {
    const int rank = args_.rank;
    std::unique_ptr<comm::ShmCommunicator> host_comm;  // CPU ranks use it; GPU engines bootstrap over it
    std::unique_ptr<comm::Communicator> device_comm;   // the GPU engine's, for GPU ranks
    std::unique_ptr<comm::ShmCommGroups> groups;  // the rank groups' (after the world's: destroyed first)
    std::unique_ptr<Runner> runner;
    RunnerContext ctx;
    try {
      LTX2_CHECK(rank < ch_.world(), "rank {} outside a fleet of {}", rank, ch_.world());
      ch_.note_progress(rank, "setting up");
      const int threads = share_cores(ch_.node_ranks());  // before any parallel region
      log_debug("rank {}: {} CPU threads ({} ranks on this node)", rank, threads, ch_.node_ranks());
      const Device device = me_.device_type == static_cast<uint32_t>(DeviceType::CUDA)
                                ? Device::cuda(me_.device_index)
                                : Device::cpu();
      const std::chrono::milliseconds timeout(ch_.control().collective_timeout_ms);
      host_comm = std::make_unique<comm::ShmCommunicator>(ch_.comm_base(), ch_.comm_bytes(), rank, timeout);
      if (!device.is_cpu())
        device_comm = comm::make_device_comm({rank, ch_.world(), device, host_comm.get(), timeout});
      comm::ShmCommGroups::DeviceFactory group_device;
      if (!device.is_cpu())
        group_device = [device, timeout](comm::Communicator& host, int group_rank, int group_size) {
          return comm::make_device_comm({group_rank, group_size, device, &host, timeout});
        };
      groups = std::make_unique<comm::ShmCommGroups>(ch_.comm_base(), ch_.comm_set(), rank, timeout,
                                                     std::move(group_device));
      ctx = RunnerContext{rank, ch_.world(), device, device_comm ? device_comm.get() : host_comm.get(),
                          groups.get()};
      const Record setup = ch_.setup_record();
      runner = make_runner(setup.meta.at("runner").get<std::string>());
      runner->setup(setup.meta.at("config"), ctx);
    } catch (const std::exception& e) {
      return fail(std::string("setup failed: ") + e.what());
    }
    ch_.note_progress(rank, "set up");
    set_state(RankState::Ready);

    for (uint64_t seq = 1;; ++seq) {
      std::optional<PostedJob> posted;
      for (;;) {
        const uint32_t seen = ch_.control().jobs_changed.load(std::memory_order_acquire);
        try {
          posted = ch_.posted_job(seq);
        } catch (const std::exception& e) {
          return fail(e.what());
        }
        if (posted) break;
        if (ch_.control().shutdown.load()) {
          set_state(RankState::Exited);
          return 0;
        }
        if (!driver_alive()) return fail("the driver is gone");
        comm::futex_wait(&ch_.control().jobs_changed, seen, kPollInterval);
      }
      ch_.note_progress(rank, fmt::format("job {}: started", posted->job_id));
      set_state(RankState::Running);
      const uint64_t entered_before = ctx.comm->collectives_entered();
      RingSink sink(ch_, rank, posted->job_id, [this] { return keep_waiting(); });
      try {
        nlohmann::json value;
        std::string job_error;
        try {
          Record rec = decode_record(posted->record, posted->bytes, "job record");
          Job job{posted->job_id, posted->attempt, std::move(rec.meta), std::move(rec.tensors)};
          value = runner->run(job, sink);
          ctx.comm->synchronize();  // a collective that failed on the device fails the job here
        } catch (const comm::CommError&) {
          throw;
        } catch (const Error& e) {  // JobError, failed checks, a corrupt record: this job fails
          job_error = e.what();
        }
        sink.terminal(job_error.empty(), value, job_error, ctx.comm->collectives_entered() - entered_before);
      } catch (const std::exception& e) {
        return fail(fmt::format("job {}: {}", posted->job_id, e.what()));
      } catch (...) {
        return fail(fmt::format("job {}: an exception that is not a std::exception", posted->job_id));
      }
      me_.jobs_done.store(seq, std::memory_order_release);
      set_state(RankState::Ready);
    }
  }

  WorkerArgs args_;
  FleetChannel ch_;
  RankBlock& me_;
  std::atomic<bool> stop_heartbeat_{false};
};

}  // namespace

std::optional<int> run_worker_if_requested(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--worker") != 0) {
#ifdef LTX2_WITH_MPI
    try {
      return run_node_agent_if_launched();  // a node agent of a job across nodes, or node 0 going on
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ltx2: %s\n", e.what());
      return 1;
    }
#else
    return std::nullopt;
#endif
  }
  WorkerArgs args;
  if (!parse_args(argc, argv, &args)) {
    std::fprintf(stderr, "ltx2 worker: expected --worker --rank R --driver-pid P\n");
    return 2;
  }
  init_logging("rank " + std::to_string(args.rank));
  try {
    ShmRegion region = ShmRegion::adopt(kWorkerRegionFd);
    FleetChannel ch = FleetChannel::attach(region.data(), region.size());
    Worker worker(args, ch);
    return worker.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ltx2 worker rank %d: %s\n", args.rank, e.what());
    return 3;
  }
}

}  // namespace ltx2::runtime
