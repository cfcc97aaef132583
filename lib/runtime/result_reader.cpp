// The driver's zero-copy reader of a result ring (see result_reader.h; layout in channel.h).
#include "runtime/result_reader.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "comm/futex.h"
#include "core/error.h"

namespace ltx2::runtime {

// The frames popped and not yet passed by the tail, shared by the reader and every view's lease.
struct ResultReader::Book {
  struct Frame {
    uint64_t end;  // ring position just past the frame
    bool released;
  };
  std::shared_ptr<const void> keep_alive;
  RingHeader* header = nullptr;
  std::atomic<uint32_t>* ring_space = nullptr;
  mutable std::mutex mu;
  std::deque<Frame> frames;
  uint64_t first = 0;  // the number of frames.front()
  uint64_t tail = 0;

  uint64_t add(uint64_t end, bool released) {
    std::lock_guard lock(mu);
    frames.push_back({end, released});
    const uint64_t number = first + frames.size() - 1;
    advance();
    return number;
  }
  void release(uint64_t number) {
    std::lock_guard lock(mu);
    frames[number - first].released = true;
    advance();
  }
  // Moves the tail past the released frames at the front and tells a waiting producer.
  void advance() {
    const uint64_t before = tail;
    while (!frames.empty() && frames.front().released) {
      tail = frames.front().end;
      frames.pop_front();
      ++first;
    }
    if (tail == before) return;
    header->tail.store(tail, std::memory_order_release);
    comm::bump_and_wake(ring_space);
  }
};

// Owned by a record's tensor views: the frame goes back to the ring when the last view is dropped.
struct ResultReader::FrameLease {
  FrameLease(std::shared_ptr<Book> b, uint64_t f) : book(std::move(b)), frame(f) {}
  ~FrameLease() { book->release(frame); }
  FrameLease(const FrameLease&) = delete;
  FrameLease& operator=(const FrameLease&) = delete;
  std::shared_ptr<Book> book;
  uint64_t frame;
};

ResultReader::ResultReader(const FleetChannel& channel, int rank, std::shared_ptr<const void> keep_alive)
    : book_(std::make_shared<Book>()),
      data_(channel.ring_data(rank)),
      capacity_(channel.ring_capacity()),
      rank_(rank) {
  book_->keep_alive = std::move(keep_alive);
  book_->header = channel.ring(rank);
  book_->ring_space = &channel.control().ring_space;
  book_->tail = book_->header->tail.load(std::memory_order_acquire);
  read_ = book_->tail;
}

std::optional<Record> ResultReader::pop() {
  const std::string what = "result record from rank " + std::to_string(rank_);
  for (;;) {
    const uint64_t head = book_->header->head.load(std::memory_order_acquire);
    if (head == read_) return std::nullopt;
    const uint64_t available = head - read_;
    LTX2_CHECK(available <= capacity_ && available % 64 == 0,
               "corrupt result ring of rank {}: {} unread bytes in a ring of {}", rank_, available,
               capacity_);
    const uint64_t pos = read_ % capacity_, to_end = capacity_ - pos;
    uint64_t len;
    std::memcpy(&len, data_ + pos, 8);
    if (len == kRingWrap) {
      LTX2_CHECK(to_end <= available, "corrupt {}: wrap past the written data", what);
      book_->add(read_ + to_end, true);
      ++frames_popped_;
      read_ += to_end;
      continue;
    }
    LTX2_CHECK(
        to_end >= kRingFrameHeader && len <= to_end - kRingFrameHeader && ring_frame_bytes(len) <= available,
        "corrupt {}: frame of {} bytes", what, len);
    const uint64_t frame = ring_frame_bytes(len);
    auto lease = std::make_shared<FrameLease>(book_, book_->add(read_ + frame, false));
    ++frames_popped_;
    read_ += frame;
    return decode_record(data_ + pos + kRingFrameHeader, len, what, std::move(lease));
  }
}

uint64_t ResultReader::written() const {
  return book_->header->head.load(std::memory_order_acquire);
}

uint64_t ResultReader::oldest_held_frame() const {
  std::lock_guard lock(book_->mu);
  for (size_t i = 0; i < book_->frames.size(); ++i)
    if (!book_->frames[i].released) return book_->first + i;
  return book_->first + book_->frames.size();
}

uint64_t ResultReader::reserved_bytes() const {
  std::lock_guard lock(book_->mu);
  return read_ - book_->tail;
}

uint64_t ResultReader::producer_waiting_for() const {
  return book_->header->waiting_for.load(std::memory_order_relaxed);
}

}  // namespace ltx2::runtime
