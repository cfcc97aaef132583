// Fleet channel operations (layout and ownership rules in channel.h).
#include "runtime/channel.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <new>

#include "comm/futex.h"
#include "comm/shm_communicator.h"
#include "core/error.h"

namespace ltx2::runtime {
namespace {

constexpr uint32_t kChannelMagic = 0x4c58464cu;  // "LXFL"
constexpr uint32_t kVersion = 5;

size_t align64(size_t n) {
  return (n + 63) / 64 * 64;
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

FleetChannel::Layout FleetChannel::layout_of(const ChannelSizes& s) {
  Layout l;
  l.world = s.world;
  l.node_ranks = s.node_ranks > 0 ? s.node_ranks : s.world;
  l.comm_slot_capacity = s.comm_slot_capacity;
  l.job_slots = s.job_slots;
  l.job_capacity = align64(s.job_capacity);
  l.ring_capacity = align64(s.ring_capacity);
  l.setup_offset = align64(sizeof(ControlBlock));
  l.jobs_offset = l.setup_offset + align64(s.setup_capacity);
  l.rings_offset = l.jobs_offset + s.job_slots * (sizeof(JobSlot) + l.job_capacity);
  l.comm_offset = l.rings_offset + static_cast<size_t>(s.world) * (sizeof(RingHeader) + l.ring_capacity);
  l.comm = comm::ShmCommSet(s.world, s.comm_slot_capacity, l.node_ranks);
  l.total_bytes = l.comm_offset + align64(l.comm.bytes());
  return l;
}

size_t FleetChannel::region_bytes(const ChannelSizes& sizes) {
  return layout_of(sizes).total_bytes;
}

FleetChannel FleetChannel::format(void* base, size_t bytes, const ChannelSizes& s, const EncodedRecord& setup,
                                  std::chrono::milliseconds heartbeat_interval,
                                  std::chrono::milliseconds collective_timeout) {
  LTX2_CHECK(s.world >= 1 && s.world <= kMaxRanks, "fleet: {} ranks is outside 1..{}", s.world, kMaxRanks);
  LTX2_CHECK(s.job_slots >= 1 && s.job_slots <= UINT32_MAX, "fleet: {} job slots is outside 1..2^32-1",
             s.job_slots);
  LTX2_CHECK(s.ring_capacity >= 4096 && s.job_capacity >= 64, "fleet: ring or job capacity too small");
  LTX2_CHECK(
      s.node_ranks >= 0 && s.node_ranks <= s.world && (s.node_ranks == 0 || s.world % s.node_ranks == 0),
      "fleet: {} ranks a node do not divide {} ranks", s.node_ranks, s.world);
  FleetChannel ch;
  ch.layout_ = layout_of(s);
  ch.layout_.setup_bytes = setup.size();
  const Layout& l = ch.layout_;
  LTX2_CHECK(bytes >= l.total_bytes, "fleet: region of {} bytes is smaller than the {} needed", bytes,
             l.total_bytes);
  LTX2_CHECK(setup.size() <= s.setup_capacity, "fleet: setup record of {} bytes exceeds the setup area of {}",
             setup.size(), s.setup_capacity);
  ch.base_ = static_cast<uint8_t*>(base);
  ch.cb_ = new (base) ControlBlock{};
  ControlBlock* cb = ch.cb_;
  cb->version = kVersion;
  cb->world = static_cast<uint32_t>(s.world);
  cb->job_slots = static_cast<uint32_t>(s.job_slots);
  cb->setup_capacity = s.setup_capacity;
  cb->job_capacity = s.job_capacity;
  cb->ring_capacity = s.ring_capacity;
  cb->comm_slot_capacity = s.comm_slot_capacity;
  cb->node_ranks = static_cast<uint32_t>(l.node_ranks);
  cb->setup_bytes = setup.size();
  cb->heartbeat_interval_ms = static_cast<uint64_t>(heartbeat_interval.count());
  cb->collective_timeout_ms = static_cast<uint64_t>(collective_timeout.count());
  setup.write(ch.base_ + l.setup_offset);
  for (size_t i = 0; i < s.job_slots; ++i) new (ch.slot(i)) JobSlot{};
  for (int r = 0; r < s.world; ++r) new (ch.ring(r)) RingHeader{};
  ch.comm_set().format(ch.base_ + l.comm_offset);
  std::atomic_thread_fence(std::memory_order_release);
  cb->magic = kChannelMagic;
  return ch;
}

FleetChannel FleetChannel::attach(void* base, size_t bytes) {
  LTX2_CHECK(bytes >= sizeof(ControlBlock), "fleet channel: region of {} bytes is too small", bytes);
  auto* cb = static_cast<ControlBlock*>(base);
  LTX2_CHECK(cb->magic == kChannelMagic && cb->version == kVersion,
             "fleet channel: not a version {} fleet region", kVersion);
  ChannelSizes s;
  s.world = static_cast<int>(cb->world);
  s.job_slots = cb->job_slots;
  s.setup_capacity = cb->setup_capacity;
  s.job_capacity = cb->job_capacity;
  s.ring_capacity = cb->ring_capacity;
  s.comm_slot_capacity = cb->comm_slot_capacity;
  s.node_ranks = static_cast<int>(cb->node_ranks);
  // Each size at most the region's (so the layout's sums and products cannot overflow) before the
  // layout they give is checked against the region.
  const bool sizes_fit = s.world >= 1 && s.world <= kMaxRanks && s.setup_capacity <= bytes &&
                         s.job_capacity <= bytes && s.ring_capacity <= bytes &&
                         s.comm_slot_capacity <= bytes && s.node_ranks >= 1 && s.node_ranks <= s.world &&
                         s.world % s.node_ranks == 0 && s.job_slots >= 1 &&
                         s.job_slots <= bytes / (sizeof(JobSlot) + align64(s.job_capacity));
  FleetChannel ch;
  if (sizes_fit) ch.layout_ = layout_of(s);
  ch.layout_.setup_bytes = cb->setup_bytes;
  LTX2_CHECK(sizes_fit && ch.layout_.total_bytes <= bytes && ch.layout_.setup_bytes <= s.setup_capacity,
             "fleet channel: the region's header (world {}, {} job slots, setup of {} bytes) does not fit "
             "its {} bytes",
             s.world, s.job_slots, ch.layout_.setup_bytes, bytes);
  ch.base_ = static_cast<uint8_t*>(base);
  ch.cb_ = cb;
  return ch;
}

JobSlot* FleetChannel::slot(size_t i) const {
  return reinterpret_cast<JobSlot*>(base_ + layout_.jobs_offset +
                                    i * (sizeof(JobSlot) + layout_.job_capacity));
}

RingHeader* FleetChannel::ring(int r) const {
  return reinterpret_cast<RingHeader*>(base_ + layout_.rings_offset +
                                       static_cast<size_t>(r) * (sizeof(RingHeader) + layout_.ring_capacity));
}

Record FleetChannel::setup_record() const {
  return decode_record(base_ + layout_.setup_offset, layout_.setup_bytes, "setup record");
}

bool FleetChannel::try_post_job(uint64_t seq, uint64_t job_id, uint64_t attempt,
                                const std::vector<uint8_t>& record) {
  LTX2_CHECK(record.size() <= layout_.job_capacity,
             "job {}: record of {} bytes exceeds the job slot of {} bytes", job_id, record.size(),
             layout_.job_capacity);
  LTX2_CHECK(seq == jobs_posted_ + 1, "fleet channel: job {} posted out of order", seq);
  if (seq > layout_.job_slots) {
    for (int r = 0; r < world(); ++r)
      if (rank(r).jobs_done.load(std::memory_order_acquire) < seq - layout_.job_slots) return false;
  }
  const size_t i = (seq - 1) % layout_.job_slots;
  JobSlot* s = slot(i);
  std::memcpy(slot_data(i), record.data(), record.size());
  s->job_id = job_id;
  s->attempt = attempt;
  s->bytes = record.size();
  s->seq.store(seq, std::memory_order_release);
  jobs_posted_ = seq;
  cb_->jobs_posted.store(seq, std::memory_order_release);
  comm::bump_and_wake(&cb_->jobs_changed);
  return true;
}

void FleetChannel::mirror_job(uint64_t seq, uint64_t job_id, uint64_t attempt, const uint8_t* record,
                              size_t bytes) {
  LTX2_CHECK(bytes <= layout_.job_capacity, "job {}: record of {} bytes exceeds the job slot of {} bytes",
             job_id, bytes, layout_.job_capacity);
  LTX2_CHECK(seq == jobs_posted_ + 1, "fleet channel: job {} mirrored out of order", seq);
  const size_t i = (seq - 1) % layout_.job_slots;
  JobSlot* s = slot(i);
  if (bytes) std::memcpy(slot_data(i), record, bytes);
  s->job_id = job_id;
  s->attempt = attempt;
  s->bytes = bytes;
  s->seq.store(seq, std::memory_order_release);
  jobs_posted_ = seq;
  cb_->jobs_posted.store(seq, std::memory_order_release);
  comm::bump_and_wake(&cb_->jobs_changed);
}

std::optional<PostedJob> FleetChannel::posted_job(uint64_t seq) const {
  if (cb_->jobs_posted.load(std::memory_order_acquire) < seq) return std::nullopt;
  const size_t i = (seq - 1) % layout_.job_slots;
  const JobSlot* s = slot(i);
  const uint64_t held = s->seq.load(std::memory_order_acquire);
  LTX2_CHECK(held == seq, "fleet channel: job slot {} holds job {} where job {} was expected", i, held, seq);
  const uint64_t bytes = s->bytes;  // read once: the driver could be rewriting a slot it thinks free
  LTX2_CHECK(bytes <= layout_.job_capacity, "fleet channel: job slot {} claims {} bytes", i, bytes);
  return PostedJob{seq, s->job_id, s->attempt, slot_data(i), bytes};
}

void FleetChannel::push_result(int r, const EncodedRecord& rec, const std::function<bool()>& keep_waiting) {
  RingHeader* h = ring(r);
  uint8_t* data = ring_data(r);
  const uint64_t cap = layout_.ring_capacity;
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

void FleetChannel::note_progress(int r, std::string_view activity) {
  RankBlock& b = rank(r);
  std::array<uint64_t, kActivityWords> words{};
  std::memcpy(words.data(), activity.data(), std::min(activity.size(), sizeof(words) - 1));
  const uint32_t seq = b.activity_seq.load(std::memory_order_relaxed);
  b.activity_seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < kActivityWords; ++i) b.activity[i].store(words[i], std::memory_order_relaxed);
  b.activity_seq.store(seq + 2, std::memory_order_release);
  b.progress_ns.store(monotonic_ns(), std::memory_order_release);
}

std::string FleetChannel::activity_of(int r) const {
  const RankBlock& b = rank(r);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint32_t before = b.activity_seq.load(std::memory_order_acquire);
    if (before % 2) continue;
    std::array<uint64_t, kActivityWords> words;
    for (size_t i = 0; i < kActivityWords; ++i) words[i] = b.activity[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (b.activity_seq.load(std::memory_order_relaxed) != before) continue;
    const char* text = reinterpret_cast<const char*>(words.data());
    return std::string(text, strnlen(text, sizeof(words)));
  }
  return {};
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
