// Fleet channel operations (layout and ownership rules in channel.h).
#include "runtime/channel.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "comm/futex.h"
#include "comm/shm_communicator.h"
#include "core/error.h"

namespace ltx2::runtime {
namespace {

constexpr uint32_t kMagic = 0x4c58464cu;  // "LXFL"
constexpr uint32_t kVersion = 2;

size_t align64(size_t n) {
  return (n + 63) / 64 * 64;
}

struct Offsets {
  size_t setup, jobs, rings, comm, comm_bytes, total;
};

Offsets offsets_of(const ChannelSizes& s) {
  Offsets o{};
  o.setup = align64(sizeof(ControlBlock));
  o.jobs = o.setup + align64(s.setup_capacity);
  o.rings = o.jobs + s.job_slots * (sizeof(JobSlot) + align64(s.job_capacity));
  o.comm = o.rings + static_cast<size_t>(s.world) * (sizeof(RingHeader) + align64(s.ring_capacity));
  o.comm_bytes = comm::ShmCommunicator::region_bytes(s.world, s.comm_slot_capacity);
  o.total = o.comm + align64(o.comm_bytes);
  return o;
}

}  // namespace

uint64_t ring_frame_bytes(uint64_t record_bytes) {
  return kRingFrameHeader + align64(record_bytes);
}

uint64_t monotonic_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

size_t FleetChannel::region_bytes(const ChannelSizes& sizes) {
  return offsets_of(sizes).total;
}

FleetChannel FleetChannel::format(void* base, size_t bytes, const ChannelSizes& s, const EncodedRecord& setup,
                                  std::chrono::milliseconds heartbeat_interval,
                                  std::chrono::milliseconds collective_timeout) {
  LTX2_CHECK(s.world >= 1 && s.world <= kMaxRanks, "fleet: {} ranks is outside 1..{}", s.world, kMaxRanks);
  LTX2_CHECK(s.job_slots >= 1, "fleet: at least one job slot is needed");
  LTX2_CHECK(s.ring_capacity >= 4096 && s.job_capacity >= 64, "fleet: ring or job capacity too small");
  const Offsets o = offsets_of(s);
  LTX2_CHECK(bytes >= o.total, "fleet: region of {} bytes is smaller than the {} needed", bytes, o.total);
  LTX2_CHECK(setup.size() <= s.setup_capacity, "fleet: setup record of {} bytes exceeds the setup area of {}",
             setup.size(), s.setup_capacity);
  auto* base8 = static_cast<uint8_t*>(base);
  auto* cb = new (base) ControlBlock{};
  cb->version = kVersion;
  cb->world = static_cast<uint32_t>(s.world);
  cb->job_slots = static_cast<uint32_t>(s.job_slots);
  cb->setup_capacity = s.setup_capacity;
  cb->job_capacity = align64(s.job_capacity);
  cb->ring_capacity = align64(s.ring_capacity);
  cb->comm_slot_capacity = s.comm_slot_capacity;
  cb->setup_offset = o.setup;
  cb->jobs_offset = o.jobs;
  cb->rings_offset = o.rings;
  cb->comm_offset = o.comm;
  cb->comm_bytes = o.comm_bytes;
  cb->total_bytes = o.total;
  cb->setup_bytes = setup.size();
  cb->heartbeat_interval_ms = static_cast<uint64_t>(heartbeat_interval.count());
  cb->collective_timeout_ms = static_cast<uint64_t>(collective_timeout.count());
  setup.write(base8 + o.setup);
  FleetChannel ch;
  ch.base_ = base8;
  ch.cb_ = cb;
  for (size_t i = 0; i < s.job_slots; ++i) new (ch.slot(i)) JobSlot{};
  for (int r = 0; r < s.world; ++r) {
    auto* h = new (ch.ring(r)) RingHeader{};
    h->capacity = cb->ring_capacity;
  }
  comm::ShmCommunicator::format_region(base8 + o.comm, o.comm_bytes, s.world, s.comm_slot_capacity);
  std::atomic_thread_fence(std::memory_order_release);
  cb->magic = kMagic;
  return ch;
}

FleetChannel FleetChannel::attach(void* base, size_t bytes) {
  LTX2_CHECK(bytes >= sizeof(ControlBlock), "fleet channel: region of {} bytes is too small", bytes);
  auto* cb = static_cast<ControlBlock*>(base);
  LTX2_CHECK(cb->magic == kMagic && cb->version == kVersion, "fleet channel: not a version {} fleet region",
             kVersion);
  LTX2_CHECK(cb->total_bytes <= bytes && cb->world >= 1 && cb->world <= kMaxRanks,
             "fleet channel: region header does not match its {} bytes", bytes);
  FleetChannel ch;
  ch.base_ = static_cast<uint8_t*>(base);
  ch.cb_ = cb;
  return ch;
}

JobSlot* FleetChannel::slot(size_t i) const {
  return reinterpret_cast<JobSlot*>(base_ + cb_->jobs_offset + i * (sizeof(JobSlot) + cb_->job_capacity));
}

RingHeader* FleetChannel::ring(int r) const {
  return reinterpret_cast<RingHeader*>(base_ + cb_->rings_offset +
                                       static_cast<size_t>(r) * (sizeof(RingHeader) + cb_->ring_capacity));
}

Record FleetChannel::setup_record() const {
  return decode_record(base_ + cb_->setup_offset, cb_->setup_bytes, "setup record");
}

bool FleetChannel::try_post_job(uint64_t seq, uint64_t job_id, uint64_t attempt,
                                const std::vector<uint8_t>& record) {
  LTX2_CHECK(record.size() <= cb_->job_capacity,
             "job {}: record of {} bytes exceeds the job slot of {} bytes", job_id, record.size(),
             cb_->job_capacity);
  LTX2_CHECK(seq == cb_->jobs_posted.load() + 1, "fleet channel: job {} posted out of order", seq);
  if (seq > cb_->job_slots) {
    for (int r = 0; r < world(); ++r)
      if (rank(r).jobs_done.load(std::memory_order_acquire) < seq - cb_->job_slots) return false;
  }
  const size_t i = (seq - 1) % cb_->job_slots;
  JobSlot* s = slot(i);
  std::memcpy(slot_data(i), record.data(), record.size());
  s->job_id = job_id;
  s->attempt = attempt;
  s->bytes = record.size();
  s->seq.store(seq, std::memory_order_release);
  cb_->jobs_posted.store(seq, std::memory_order_release);
  comm::bump_and_wake(&cb_->jobs_changed);
  return true;
}

std::optional<PostedJob> FleetChannel::posted_job(uint64_t seq) const {
  if (cb_->jobs_posted.load(std::memory_order_acquire) < seq) return std::nullopt;
  const size_t i = (seq - 1) % cb_->job_slots;
  const JobSlot* s = slot(i);
  const uint64_t held = s->seq.load(std::memory_order_acquire);
  LTX2_CHECK(held == seq, "fleet channel: job slot {} holds job {} where job {} was expected", i, held, seq);
  LTX2_CHECK(s->bytes <= cb_->job_capacity, "fleet channel: job slot {} claims {} bytes", i, s->bytes);
  return PostedJob{seq, s->job_id, s->attempt, slot_data(i), s->bytes};
}

void FleetChannel::push_result(int r, const EncodedRecord& rec, const std::function<bool()>& keep_waiting) {
  RingHeader* h = ring(r);
  uint8_t* data = ring_data(r);
  const uint64_t cap = h->capacity;
  const uint64_t need = ring_frame_bytes(rec.size());
  LTX2_CHECK(need <= cap / 2,
             "result of {} bytes does not fit the result ring of {} bytes (raise the ring size)", rec.size(),
             cap);
  for (;;) {
    const uint32_t seen = cb_->ring_space.load(std::memory_order_acquire);
    const uint64_t head = h->head.load(std::memory_order_relaxed);
    const uint64_t tail = h->tail.load(std::memory_order_acquire);
    const uint64_t pos = head % cap, to_end = cap - pos;
    const uint64_t skip = to_end < need ? to_end : 0;  // never split a frame: wrap instead
    if (head - tail <= cap && cap - (head - tail) >= skip + need) {
      h->waiting_for.store(0, std::memory_order_relaxed);
      uint64_t at = head;
      if (skip) {
        std::memcpy(data + pos, &kRingWrap, 8);
        at += skip;
      }
      const uint64_t len = rec.size();
      std::memcpy(data + at % cap, &len, 8);
      rec.write(data + at % cap + kRingFrameHeader);
      h->head.store(at + need, std::memory_order_release);
      comm::bump_and_wake(&cb_->results_changed);
      return;
    }
    h->waiting_for.store(skip + need, std::memory_order_relaxed);
    LTX2_CHECK(keep_waiting(), "rank {}: gave up waiting for space in the result ring", r);
    comm::futex_wait(&cb_->ring_space, seen, std::chrono::milliseconds(50));
  }
}

void FleetChannel::record_error(int r, const std::string& message) {
  RankBlock& b = rank(r);
  uint32_t expected = 0;
  if (!b.error_set.compare_exchange_strong(expected, 2)) return;
  std::snprintf(b.error, sizeof(b.error), "%s", message.c_str());
  b.error_set.store(1, std::memory_order_release);
}

std::string FleetChannel::error_of(int r) const {
  const RankBlock& b = rank(r);
  if (b.error_set.load(std::memory_order_acquire) != 1) return {};
  return std::string(b.error, strnlen(b.error, sizeof(b.error)));
}

}  // namespace ltx2::runtime
