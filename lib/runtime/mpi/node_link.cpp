// The MPI node link: driver side (RemoteNodes), node agent, communicator relay (protocol in
// node_link.h, mirrored regions in nodes.h).
#include "runtime/mpi/node_link.h"

// The C API only: Open MPI's and MPICH's headers otherwise pull in C++ bindings the build does not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "comm/futex.h"
#include "comm/shm_communicator.h"
#include "core/error.h"
#include "core/log.h"
#include "runtime/channel.h"
#include "runtime/launcher.h"
#include "runtime/nodes.h"
#include "runtime/shm_region.h"

namespace ltx2::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum Kind : uint32_t {
  kPing = 1,
  kQuit,
  kStart,
  kStop,
  kJob,
  kShutdown,
  kTail,
  kRanks,
  kRing,
  kExit,
  kAbort,
  kRelay
};
constexpr int kTag = 0x4c58;
constexpr auto kPingEvery = milliseconds(100);
constexpr auto kRanksEvery = milliseconds(20);
constexpr auto kIdleSleep = std::chrono::microseconds(200);
constexpr milliseconds kDefaultSilence{30000};  // before a fleet names its heartbeat timeout
constexpr uint64_t kNone = ~0ull;               // an age that was never set (no beat yet)

int64_t ms_since(SteadyClock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(SteadyClock::now() - t).count();
}

// A message being built: the header, then fields appended in order.
class Out {
 public:
  Out(Kind kind, uint64_t generation) {
    put<uint32_t>(kind);
    put<uint32_t>(0);
    put<uint64_t>(generation);
  }
  template <typename T>
  void put(T v) {
    const size_t at = b_.size();
    b_.resize(at + sizeof(T));
    std::memcpy(b_.data() + at, &v, sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    put<uint64_t>(n);
    const size_t at = b_.size();
    b_.resize(at + n);
    if (n) std::memcpy(b_.data() + at, p, n);
  }
  void put_str(const std::string& s) { put_bytes(s.data(), s.size()); }
  std::vector<uint8_t> take() { return std::move(b_); }

 private:
  std::vector<uint8_t> b_;
};

// A message being read; every read is bounds-checked (a short message names its node).
class In {
 public:
  In(const std::vector<uint8_t>& b, int from) : b_(b), from_(from) {
    kind = get<uint32_t>();
    get<uint32_t>();
    generation = get<uint64_t>();
  }
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  // A length-prefixed byte run, as a pointer into the message.
  std::pair<const uint8_t*, size_t> get_bytes() {
    const uint64_t n = get<uint64_t>();
    need(n);
    const uint8_t* p = b_.data() + at_;
    at_ += n;
    return {p, n};
  }
  std::string get_str() {
    auto [p, n] = get_bytes();
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  uint32_t kind = 0;
  uint64_t generation = 0;

 private:
  void need(uint64_t n) const {
    LTX2_CHECK(n <= b_.size() - at_, "node link: a truncated message (kind {}) from node {}", kind, from_);
  }
  const std::vector<uint8_t>& b_;
  int from_;
  size_t at_ = 0;
};

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(std::max(0, len)));
}

// Non-blocking point-to-point transport between the node processes (the link thread only).
class Transport {
 public:
  Transport(int node, int nodes) : node_(node), nodes_(nodes) {
    last_heard_.assign(nodes, SteadyClock::now());
    last_sent_.assign(nodes, SteadyClock::time_point{});
  }
  int node() const { return node_; }
  int nodes() const { return nodes_; }

  void send(int to, std::vector<uint8_t> message) {
    LTX2_CHECK(message.size() <= static_cast<size_t>(INT32_MAX),
               "node link: a message of {} bytes to node {}", message.size(), to);
    sends_.push_back({std::move(message), MPI_REQUEST_NULL, to});
    Pending& p = sends_.back();
    const int rc = MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, to, kTag,
                             MPI_COMM_WORLD, &p.request);
    LTX2_CHECK(rc == MPI_SUCCESS, "node link: sending to node {} failed: {}", to, mpi_error_text(rc));
    last_sent_[to] = SteadyClock::now();
  }
  void send_all(const std::vector<uint8_t>& message) {
    for (int k = 0; k < nodes_; ++k)
      if (k != node_) send(k, message);
  }
  // Calls on_message(from, bytes) for every message waiting now; true when there was one.
  template <typename F>
  bool receive(F&& on_message) {
    bool any = false;
    for (;;) {
      int flag = 0;
      MPI_Status st;
      int rc = MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &st);
      LTX2_CHECK(rc == MPI_SUCCESS, "node link: probing for messages failed: {}", mpi_error_text(rc));
      if (!flag) return any;
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      std::vector<uint8_t> buf(static_cast<size_t>(std::max(count, 0)));
      const int from = st.MPI_SOURCE;
      rc = MPI_Recv(buf.data(), count, MPI_BYTE, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      LTX2_CHECK(rc == MPI_SUCCESS, "node link: receiving from node {} failed: {}", from, mpi_error_text(rc));
      LTX2_CHECK(from >= 0 && from < nodes_, "node link: a message from MPI rank {} outside {} nodes", from,
                 nodes_);
      last_heard_[from] = SteadyClock::now();
      any = true;
      on_message(from, buf);
    }
  }
  // Pings the nodes not sent to for a while and retires finished sends.
  void tick(const std::vector<int>& peers) {
    for (int k : peers)
      if (SteadyClock::now() - last_sent_[k] >= kPingEvery) send(k, Out(kPing, 0).take());
    retire();
  }
  void retire() {
    while (!sends_.empty()) {
      int done = 0;
      const int rc = MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE);
      LTX2_CHECK(rc == MPI_SUCCESS, "node link: sending to node {} failed: {}", sends_.front().to,
                 mpi_error_text(rc));
      if (!done) return;
      sends_.pop_front();
    }
  }
  // Waits up to `bound` for every send to complete; false if some did not.
  bool flush(milliseconds bound) {
    const auto begin = SteadyClock::now();
    while (!sends_.empty()) {
      retire();
      if (sends_.empty()) break;
      if (SteadyClock::now() - begin > bound) return false;
      std::this_thread::sleep_for(kIdleSleep);
    }
    return true;
  }
  int64_t silent_ms(int k) const { return ms_since(last_heard_[k]); }

 private:
  struct Pending {
    std::vector<uint8_t> bytes;
    MPI_Request request;
    int to;
  };
  int node_, nodes_;
  std::deque<Pending> sends_;  // in order: MPI completes a pair's sends in order anyway
  std::vector<SteadyClock::time_point> last_heard_, last_sent_;
};

// The communicator's slots of the other nodes' ranks, kept in step with theirs (node_link.h).
class CommRelay {
 public:
  CommRelay(void* base, size_t bytes, int ranks_per_node, Transport& t, uint64_t generation)
      : base_(base), per_node_(ranks_per_node), t_(t), generation_(generation) {
    auto* h = static_cast<comm::CommHeader*>(base);
    capacity_ = h->slot_capacity;
    world_ = static_cast<int>(h->world);
    LTX2_CHECK(
        world_ == per_node_ * t.nodes() && bytes >= comm::ShmCommunicator::region_bytes(world_, capacity_),
        "node link: a communicator region of world {} for {} nodes of {} ranks", world_, t.nodes(),
        per_node_);
    lo_ = t.node() * per_node_;
  }

  bool pump() {
    auto* h = static_cast<comm::CommHeader*>(base_);
    if (h->aborted.load(std::memory_order_acquire)) return false;
    bool did = false;
    if (!sent_) {
      for (int p = lo_; p < lo_ + per_node_; ++p)
        if (slot(p)->published.load(std::memory_order_acquire) < round_) return false;
      Out out(kRelay, generation_);
      out.put<uint64_t>(round_);
      for (int p = lo_; p < lo_ + per_node_; ++p) {
        const comm::CommSlot* s = slot(p);
        out.put<uint32_t>(s->op);
        out.put<uint32_t>(s->dtype);
        out.put<uint64_t>(s->meta0);
        out.put<uint64_t>(s->meta1);
        out.put<uint64_t>(s->total_bytes);
        out.put<uint64_t>(s->chunk_offset);
        const uint64_t n = std::min<uint64_t>(s->chunk_bytes, capacity_);  // the rank's own bound
        out.put_bytes(reinterpret_cast<const uint8_t*>(s) + 64, n);
      }
      t_.send_all(out.take());
      // Our ranks' round is copied out: from the other nodes' side they may overwrite it.
      for (int q = 0; q < world_; ++q)
        if (q < lo_ || q >= lo_ + per_node_) slot(q)->consumed.store(round_, std::memory_order_release);
      sent_ = true;
      comm::bump_and_wake(&h->changed);
      did = true;
    }
    auto it = got_.find(round_);
    if (it != got_.end() && static_cast<int>(it->second.size()) == t_.nodes() - 1) {
      for (auto& [from, bytes] : it->second) write_round(from, bytes);
      got_.erase(it);
      ++round_;
      sent_ = false;
      comm::bump_and_wake(&h->changed);
      did = true;
    }
    return did;
  }

  void on_relay(int from, In& in, const std::vector<uint8_t>& bytes) {
    const uint64_t round = in.get<uint64_t>();
    LTX2_CHECK(round == round_ || round == round_ + 1,
               "node link: node {} sent communicator round {} while this node is at round {}", from, round,
               round_);
    LTX2_CHECK(got_[round].emplace(from, bytes).second, "node link: node {} sent round {} twice", from,
               round);
  }

 private:
  comm::CommSlot* slot(int p) const { return comm::comm_slot(base_, capacity_, p); }

  void write_round(int from, const std::vector<uint8_t>& bytes) {
    In in(bytes, from);
    in.get<uint64_t>();  // the round, checked on arrival
    for (int p = from * per_node_; p < (from + 1) * per_node_; ++p) {
      comm::CommSlot* s = slot(p);
      s->op = in.get<uint32_t>();
      s->dtype = in.get<uint32_t>();
      s->meta0 = in.get<uint64_t>();
      s->meta1 = in.get<uint64_t>();
      s->total_bytes = in.get<uint64_t>();
      s->chunk_offset = in.get<uint64_t>();
      auto [data, n] = in.get_bytes();
      LTX2_CHECK(n <= capacity_, "node link: node {} sent a chunk of {} bytes for rank {}", from, n, p);
      s->chunk_bytes = n;
      if (n) std::memcpy(reinterpret_cast<uint8_t*>(s) + 64, data, n);
      s->published.store(round_, std::memory_order_release);
    }
  }

  void* base_;
  int per_node_, world_ = 0, lo_ = 0;
  size_t capacity_ = 0;
  Transport& t_;
  uint64_t generation_;
  uint64_t round_ = 1;
  bool sent_ = false;
  std::map<uint64_t, std::map<int, std::vector<uint8_t>>> got_;  // round -> node -> its message
};

nlohmann::json spec_to_json(const NodeFleetSpec& s) {
  nlohmann::json devices = nlohmann::json::array();
  for (const Device& d : s.devices) devices.push_back({static_cast<int>(d.type), d.index});
  return {{"generation", s.generation},
          {"world", s.sizes.world},
          {"setup_capacity", s.sizes.setup_capacity},
          {"job_slots", s.sizes.job_slots},
          {"job_capacity", s.sizes.job_capacity},
          {"ring_capacity", s.sizes.ring_capacity},
          {"comm_slot_capacity", s.sizes.comm_slot_capacity},
          {"node_ranks", s.sizes.node_ranks},
          {"runner", s.runner},
          {"config", s.setup_config},
          {"devices", devices},
          {"heartbeat_interval_ms", s.heartbeat_interval.count()},
          {"heartbeat_timeout_ms", s.heartbeat_timeout.count()},
          {"collective_timeout_ms", s.collective_timeout.count()}};
}

NodeFleetSpec spec_from_json(const nlohmann::json& j) {
  NodeFleetSpec s;
  s.generation = j.at("generation");
  s.sizes.world = j.at("world");
  s.sizes.setup_capacity = j.at("setup_capacity");
  s.sizes.job_slots = j.at("job_slots");
  s.sizes.job_capacity = j.at("job_capacity");
  s.sizes.ring_capacity = j.at("ring_capacity");
  s.sizes.comm_slot_capacity = j.at("comm_slot_capacity");
  s.sizes.node_ranks = j.at("node_ranks");
  s.runner = j.at("runner");
  s.setup_config = j.at("config");
  for (const auto& d : j.at("devices"))
    s.devices.push_back(d.at(0).get<int>() == static_cast<int>(DeviceType::CUDA) ? Device::cuda(d.at(1))
                                                                                 : Device::cpu());
  s.heartbeat_interval = milliseconds(j.at("heartbeat_interval_ms").get<int64_t>());
  s.heartbeat_timeout = milliseconds(j.at("heartbeat_timeout_ms").get<int64_t>());
  s.collective_timeout = milliseconds(j.at("collective_timeout_ms").get<int64_t>());
  return s;
}

// Forwards the communicator's abort word to the other nodes once, and applies theirs.
void forward_abort(void* comm_base, bool& forwarded, Transport& t, uint64_t generation) {
  auto* h = static_cast<comm::CommHeader*>(comm_base);
  if (forwarded || h->aborted.load(std::memory_order_acquire) != 1) return;
  forwarded = true;
  Out out(kAbort, generation);
  out.put_str(std::string(h->abort_reason, strnlen(h->abort_reason, sizeof(h->abort_reason))));
  t.send_all(out.take());
}

// ---------------------------------------------------------------------------------------------
// Driver side (node 0).

class DriverNodes final : public RemoteNodes {
 public:
  explicit DriverNodes(int nodes) : t_(0, nodes) {
    thread_ = std::thread([this] { loop(); });
  }
  ~DriverNodes() override {
    stop_.store(true);
    thread_.join();
    // Finalize waits for every process; with a node lost it could wait forever, so then it is
    // left out (mpirun ends the job when this process exits).
    if (!broken_.load()) MPI_Finalize();
  }

  int nodes() const override { return t_.nodes(); }
  void start_fleet(const NodeFleetSpec& spec, std::shared_ptr<ShmRegion> region,
                   FleetChannel channel) override {
    LTX2_CHECK(spec.sizes.world % t_.nodes() == 0, "fleet: {} ranks do not split evenly over {} nodes",
               spec.sizes.world, t_.nodes());
    std::lock_guard lock(mu_);
    commands_.push_back(Command{spec, std::move(region), channel});
    started_generation_ = spec.generation;
  }
  void stop_fleet() override {
    std::lock_guard lock(mu_);
    commands_.push_back(Command{});
  }
  std::vector<std::pair<int, std::string>> take_exits() override {
    std::lock_guard lock(mu_);
    // Only the running generation's: the link may still report an earlier one's for a moment.
    std::vector<std::pair<int, std::string>> out;
    for (auto& [gen, rank, text] : exits_)
      if (gen == started_generation_) out.emplace_back(rank, std::move(text));
    exits_.clear();
    return out;
  }
  std::optional<std::string> lost_node() const override {
    std::lock_guard lock(mu_);
    return lost_;
  }

 private:
  struct Command {  // start when region is set, else stop
    NodeFleetSpec spec;
    std::shared_ptr<ShmRegion> region;
    FleetChannel channel;
  };
  struct Current {
    NodeFleetSpec spec;
    std::shared_ptr<ShmRegion> region;
    FleetChannel channel;
    std::unique_ptr<CommRelay> relay;
    int per_node = 0;
    uint64_t forwarded_seq = 0;
    bool shutdown_sent = false, abort_forwarded = false;
    std::vector<uint64_t> tails_sent;
  };

  void loop() {
    std::vector<int> agents;
    for (int k = 1; k < t_.nodes(); ++k) agents.push_back(k);
    try {
      while (!stop_.load()) {
        bool did = run_commands();
        did = t_.receive([this](int from, const std::vector<uint8_t>& b) { on_message(from, b); }) || did;
        if (cur_) did = pump() || did;
        t_.tick(agents);
        check_silence(agents);
        if (!did) std::this_thread::sleep_for(kIdleSleep);
      }
      for (int k : agents) t_.send(k, Out(kQuit, 0).take());
      if (!t_.flush(milliseconds(2000))) broken_.store(true);
    } catch (const std::exception& e) {
      broken_.store(true);
      std::lock_guard lock(mu_);
      lost_ = e.what();
    }
    cur_.reset();
  }

  bool run_commands() {
    std::vector<Command> cmds;
    {
      std::lock_guard lock(mu_);
      cmds.swap(commands_);
    }
    for (Command& c : cmds) {
      if (!c.region) {
        if (cur_) t_.send_all(Out(kStop, cur_->spec.generation).take());
        cur_.reset();
        continue;
      }
      Out out(kStart, c.spec.generation);
      out.put_str(spec_to_json(c.spec).dump());
      t_.send_all(out.take());
      cur_ = std::make_unique<Current>();
      cur_->spec = std::move(c.spec);
      cur_->region = std::move(c.region);
      cur_->channel = c.channel;
      cur_->per_node = cur_->spec.sizes.world / t_.nodes();
      cur_->tails_sent.assign(cur_->spec.sizes.world, 0);
      cur_->relay = std::make_unique<CommRelay>(cur_->channel.comm_base(), cur_->channel.comm_bytes(),
                                                cur_->per_node, t_, cur_->spec.generation);
    }
    return !cmds.empty();
  }

  // Driver -> agents: new jobs, the shutdown word, ring tails, the abort word; the relay.
  bool pump() {
    Current& c = *cur_;
    FleetChannel& ch = c.channel;
    const uint64_t gen = c.spec.generation;
    bool did = false;
    const uint64_t posted = ch.control().jobs_posted.load(std::memory_order_acquire);
    while (c.forwarded_seq < posted) {
      const std::optional<PostedJob> job = ch.posted_job(c.forwarded_seq + 1);
      LTX2_CHECK(job.has_value(), "node link: job {} vanished from its slot", c.forwarded_seq + 1);
      Out out(kJob, gen);
      out.put<uint64_t>(job->seq);
      out.put<uint64_t>(job->job_id);
      out.put<uint64_t>(job->attempt);
      out.put_bytes(job->record, job->bytes);
      t_.send_all(out.take());
      ++c.forwarded_seq;
      did = true;
    }
    if (!c.shutdown_sent && ch.control().shutdown.load(std::memory_order_acquire)) {
      t_.send_all(Out(kShutdown, gen).take());
      c.shutdown_sent = true;
      did = true;
    }
    for (int r = c.per_node; r < c.spec.sizes.world; ++r) {
      const uint64_t tail = ch.ring(r)->tail.load(std::memory_order_acquire);
      if (tail == c.tails_sent[r]) continue;
      Out out(kTail, gen);
      out.put<uint32_t>(static_cast<uint32_t>(r));
      out.put<uint64_t>(tail);
      t_.send(r / c.per_node, out.take());
      c.tails_sent[r] = tail;
      did = true;
    }
    forward_abort(ch.comm_base(), c.abort_forwarded, t_, gen);
    return c.relay->pump() || did;
  }

  void on_message(int from, const std::vector<uint8_t>& bytes) {
    In in(bytes, from);
    if (in.kind == kPing) return;
    if (!cur_ || in.generation != cur_->spec.generation) return;  // an earlier generation's
    Current& c = *cur_;
    FleetChannel& ch = c.channel;
    const auto remote_rank = [&](uint32_t r) {
      LTX2_CHECK(static_cast<int>(r) / c.per_node == from && static_cast<int>(r) < c.spec.sizes.world,
                 "node link: node {} spoke for rank {}, which is not its own", from, r);
      return static_cast<int>(r);
    };
    switch (in.kind) {
      case kRanks: {
        const uint64_t now = monotonic_ns();
        bool changed = false;
        for (int i = 0; i < c.per_node; ++i) {
          const int r = remote_rank(in.get<uint32_t>());
          RankBlock& b = ch.rank(r);
          const uint32_t state = in.get<uint32_t>();
          const uint64_t beat_age = in.get<uint64_t>(), progress_age = in.get<uint64_t>();
          const uint64_t jobs_done = in.get<uint64_t>(), waiting_for = in.get<uint64_t>();
          const std::string activity = in.get_str(), error = in.get_str();
          changed = changed || b.state.load() != state || b.jobs_done.load() != jobs_done;
          if (!activity.empty() && activity != ch.activity_of(r)) ch.note_progress(r, activity);
          if (!error.empty()) ch.record_error(r, error);
          if (beat_age != kNone)
            b.heartbeat_ns.store(now - std::min(now, beat_age), std::memory_order_release);
          b.progress_ns.store(progress_age == kNone ? 0 : now - std::min(now, progress_age),
                              std::memory_order_release);
          ch.ring(r)->waiting_for.store(waiting_for, std::memory_order_relaxed);
          b.jobs_done.store(jobs_done, std::memory_order_release);
          b.state.store(state, std::memory_order_release);
        }
        if (changed) comm::bump_and_wake(&ch.control().results_changed);
        return;
      }
      case kRing: {
        const int r = remote_rank(in.get<uint32_t>());
        const uint64_t from_pos = in.get<uint64_t>();
        auto [data, n] = in.get_bytes();
        RingHeader* h = ch.ring(r);
        const uint64_t cap = ch.ring_capacity();
        LTX2_CHECK(from_pos == h->head.load() && from_pos % cap + n <= cap,
                   "node link: node {} sent ring bytes of rank {} out of order", from, r);
        if (n) std::memcpy(ch.ring_data(r) + from_pos % cap, data, n);
        h->head.store(from_pos + n, std::memory_order_release);
        comm::bump_and_wake(&ch.control().results_changed);
        return;
      }
      case kExit: {
        const int r = remote_rank(in.get<uint32_t>());
        std::lock_guard lock(mu_);
        exits_.emplace_back(c.spec.generation, r, in.get_str());
        return;
      }
      case kAbort:
        c.abort_forwarded = true;  // the sender told every node
        ch.abort_comms(in.get_str());
        return;
      case kRelay: c.relay->on_relay(from, in, bytes); return;
      default: LTX2_FAIL("node link: node {} sent a message of kind {} to the driver", from, in.kind);
    }
  }

  void check_silence(const std::vector<int>& agents) {
    const milliseconds bound = cur_ ? cur_->spec.heartbeat_timeout : kDefaultSilence;
    for (int k : agents) {
      const int64_t silent = t_.silent_ms(k);
      if (silent <= bound.count()) continue;
      std::lock_guard lock(mu_);
      if (!lost_)
        lost_ = fmt::format("node {} (MPI rank {}) sent nothing for {} ms: its agent or machine is gone", k,
                            k, silent);
      broken_.store(true);
    }
  }

  Transport t_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, broken_{false};
  mutable std::mutex mu_;  // guards commands_, exits_, started_generation_, lost_
  std::vector<Command> commands_;
  std::vector<std::tuple<uint64_t, int, std::string>> exits_;  // generation, rank, what happened
  uint64_t started_generation_ = 0;
  std::optional<std::string> lost_;
  std::unique_ptr<Current> cur_;  // the link thread's
};

// ---------------------------------------------------------------------------------------------
// Node agent (node k > 0).

class Agent {
 public:
  explicit Agent(int node, int nodes) : t_(node, nodes) {}

  int run() {
    try {
      for (;;) {
        bool did = false;
        bool quit = false;
        did =
            t_.receive([&](int from, const std::vector<uint8_t>& b) { quit = on_message(from, b) || quit; });
        if (quit) {
          stop_workers();
          t_.flush(milliseconds(2000));
          return 0;
        }
        if (cur_) did = pump() || did;
        t_.tick({0});
        const milliseconds bound = cur_ ? cur_->spec.heartbeat_timeout : kDefaultSilence;
        if (t_.silent_ms(0) > bound.count()) {
          log_error("node {}: the driver (node 0) sent nothing for {} ms; stopping this node's workers",
                    t_.node(), t_.silent_ms(0));
          stop_workers();
          return 1;
        }
        if (!did) std::this_thread::sleep_for(kIdleSleep);
      }
    } catch (const std::exception& e) {
      log_error("node {}: {}", t_.node(), e.what());
      stop_workers();
      return 1;
    }
  }

 private:
  struct Current {
    NodeFleetSpec spec;
    std::shared_ptr<ShmRegion> region;
    FleetChannel channel;
    std::unique_ptr<CommRelay> relay;
    int per_node = 0, lo = 0;
    std::vector<pid_t> pids;          // per local rank, -1 once reaped
    std::vector<uint64_t> ring_sent;  // per local rank: ring bytes sent to the driver
    SteadyClock::time_point ranks_sent{};
    bool abort_forwarded = false;
  };

  void stop_workers() {
    if (cur_) kill_and_reap(cur_->pids);
    cur_.reset();
  }

  void start(const NodeFleetSpec& spec) {
    stop_workers();
    auto c = std::make_unique<Current>();
    c->spec = spec;
    c->per_node = spec.sizes.world / t_.nodes();
    c->lo = t_.node() * c->per_node;
    c->pids.assign(c->per_node, -1);
    c->ring_sent.assign(c->per_node, 0);
    cur_ = std::move(c);
    Current& cur = *cur_;
    try {
      LTX2_CHECK(
          spec.sizes.world % t_.nodes() == 0 && static_cast<int>(spec.devices.size()) == spec.sizes.world,
          "a fleet of {} ranks cannot split over {} nodes", spec.sizes.world, t_.nodes());
      const std::string name = fmt::format("/ltx2-node{}-{}-{}", t_.node(), getpid(), spec.generation);
      cur.region =
          std::make_shared<ShmRegion>(ShmRegion::create(name, FleetChannel::region_bytes(spec.sizes)));
      cur.channel =
          FleetChannel::format(cur.region->data(), cur.region->size(), spec.sizes,
                               EncodedRecord({{"runner", spec.runner}, {"config", spec.setup_config}}, {}),
                               spec.heartbeat_interval, spec.collective_timeout);
      cur.relay = std::make_unique<CommRelay>(cur.channel.comm_base(), cur.channel.comm_bytes(), cur.per_node,
                                              t_, spec.generation);
      for (int i = 0; i < cur.per_node; ++i) {
        const int r = cur.lo + i;
        cur.channel.rank(r).device_type = static_cast<uint32_t>(spec.devices[r].type);
        cur.channel.rank(r).device_index = spec.devices[r].index;
      }
      for (int i = 0; i < cur.per_node; ++i)
        cur.pids[i] = spawn_worker(
            "/proc/self/exe",
            {"--worker", "--rank", std::to_string(cur.lo + i), "--driver-pid", std::to_string(getpid())},
            cur.region->fd());
    } catch (const std::exception& e) {
      // Every rank of this node is reported gone, with why; the driver breaks the fleet.
      for (int i = 0; i < cur.per_node; ++i)
        send_exit(cur.lo + i, fmt::format("did not start on node {}: {}", t_.node(), e.what()));
      kill_and_reap(cur.pids);
      cur_.reset();
    }
  }

  void send_exit(int rank, const std::string& text) {
    Out out(kExit, cur_->spec.generation);
    out.put<uint32_t>(static_cast<uint32_t>(rank));
    out.put_str(text);
    t_.send(0, out.take());
  }

  // Returns true on quit.
  bool on_message(int from, const std::vector<uint8_t>& bytes) {
    In in(bytes, from);
    if (in.kind == kPing) return false;
    if (in.kind == kQuit) return true;
    if (in.kind == kStart) {
      start(spec_from_json(nlohmann::json::parse(in.get_str())));
      return false;
    }
    if (!cur_ || in.generation != cur_->spec.generation) return false;
    Current& c = *cur_;
    FleetChannel& ch = c.channel;
    switch (in.kind) {
      case kStop: stop_workers(); return false;
      case kJob: {
        const uint64_t seq = in.get<uint64_t>(), job_id = in.get<uint64_t>(), attempt = in.get<uint64_t>();
        auto [record, n] = in.get_bytes();
        ch.mirror_job(seq, job_id, attempt, record, n);
        return false;
      }
      case kShutdown:
        ch.control().shutdown.store(1, std::memory_order_release);
        comm::bump_and_wake(&ch.control().jobs_changed);
        comm::bump_and_wake(&ch.control().ring_space);
        return false;
      case kTail: {
        const uint32_t r = in.get<uint32_t>();
        const uint64_t tail = in.get<uint64_t>();
        LTX2_CHECK(static_cast<int>(r) >= c.lo && static_cast<int>(r) < c.lo + c.per_node,
                   "node link: the driver sent the ring tail of rank {}, not on node {}", r, t_.node());
        ch.ring(static_cast<int>(r))->tail.store(tail, std::memory_order_release);
        comm::bump_and_wake(&ch.control().ring_space);
        return false;
      }
      case kAbort:
        c.abort_forwarded = true;
        ch.abort_comms(in.get_str());
        return false;
      case kRelay: c.relay->on_relay(from, in, bytes); return false;
      default: LTX2_FAIL("node link: node {} sent a message of kind {} to node {}", from, in.kind, t_.node());
    }
  }

  // Agent -> driver: exited workers, ring bytes, rank blocks; the abort word; the relay.
  bool pump() {
    Current& c = *cur_;
    FleetChannel& ch = c.channel;
    const uint64_t gen = c.spec.generation;
    bool did = false;
    // Exits go after a rank message, so the driver has a rank's error record before its exit.
    std::vector<std::pair<int, int>> exited;  // rank, wait status
    for (int i = 0; i < c.per_node; ++i) {
      int status = 0;
      if (c.pids[i] <= 0 || waitpid(c.pids[i], &status, WNOHANG) != c.pids[i]) continue;
      c.pids[i] = -1;
      exited.emplace_back(c.lo + i, status);
    }
    const uint64_t cap = ch.ring_capacity();
    for (int i = 0; i < c.per_node; ++i) {
      const int r = c.lo + i;
      const uint64_t head = ch.ring(r)->head.load(std::memory_order_acquire);
      while (c.ring_sent[i] < head) {  // at most two pieces: up to the ring's end, then from its start
        const uint64_t at = c.ring_sent[i], pos = at % cap;
        const uint64_t n = std::min(head - at, cap - pos);
        Out out(kRing, gen);
        out.put<uint32_t>(static_cast<uint32_t>(r));
        out.put<uint64_t>(at);
        out.put_bytes(ch.ring_data(r) + pos, n);
        t_.send(0, out.take());
        c.ring_sent[i] = at + n;
        did = true;
      }
    }
    if (!exited.empty() || SteadyClock::now() - c.ranks_sent >= kRanksEvery) {
      const uint64_t now = monotonic_ns();
      const auto age = [now](uint64_t t) { return t == 0 ? kNone : now - std::min(now, t); };
      Out out(kRanks, gen);
      for (int i = 0; i < c.per_node; ++i) {
        const int r = c.lo + i;
        const RankBlock& b = ch.rank(r);
        out.put<uint32_t>(static_cast<uint32_t>(r));
        out.put<uint32_t>(b.state.load(std::memory_order_acquire));
        out.put<uint64_t>(age(b.heartbeat_ns.load(std::memory_order_acquire)));
        out.put<uint64_t>(age(b.progress_ns.load(std::memory_order_acquire)));
        out.put<uint64_t>(b.jobs_done.load(std::memory_order_acquire));
        out.put<uint64_t>(ch.ring(r)->waiting_for.load(std::memory_order_relaxed));
        out.put_str(ch.activity_of(r));
        out.put_str(ch.error_of(r));
      }
      t_.send(0, out.take());
      c.ranks_sent = SteadyClock::now();
    }
    for (auto [r, status] : exited) {
      send_exit(r, fmt::format("{} on node {}", describe_wait_status(status), t_.node()));
      did = true;
    }
    forward_abort(ch.comm_base(), c.abort_forwarded, t_, gen);
    return c.relay->pump() || did;
  }

  Transport t_;
  std::unique_ptr<Current> cur_;
};

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(var)) return true;
  return false;
}

}  // namespace

std::optional<int> run_node_agent_if_launched() {
  if (!launched_by_mpi()) return std::nullopt;
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  LTX2_CHECK(rc == MPI_SUCCESS, "MPI: MPI_Init_thread failed: {}", mpi_error_text(rc));
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1) {  // one node: the single-machine fleet, nothing to link
    MPI_Finalize();
    return std::nullopt;
  }
  LTX2_CHECK(provided >= MPI_THREAD_SERIALIZED,
             "MPI: the library gives thread level {}, the node link needs MPI_THREAD_SERIALIZED", provided);
  // Errors come back as codes: a failed send is the link's error to report, not a silent abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (rank == 0) {
    set_remote_nodes(std::make_unique<DriverNodes>(size));
    return std::nullopt;
  }
  init_logging("node " + std::to_string(rank));
  // The driver stops the job in order; a Ctrl-C forwarded by mpirun must not kill this node's
  // workers under a running collective before the driver knows (they die with this process).
  signal(SIGINT, SIG_IGN);
  const int code = Agent(rank, size).run();
  if (code == 0) MPI_Finalize();
  return code;
}

}  // namespace ltx2::runtime
