// ResultReader: the driver's end of one result ring (layout in channel.h), zero-copy.
//
// pop() validates the next frame and decodes its record in place: the record's tensors are views
// into the shared ring, not copies. The frame's ring space stays reserved while any of those views
// lives and is given back when the last one is dropped, from any thread. Frames can be released
// in any order; the ring's tail moves past the oldest frames once they are all released, so a view
// that is held blocks the producer after at most one ring's worth of later results (backpressure,
// never unbounded memory). Keep result tensors briefly, or clone() the ones to keep.
//
// Safety: a view keeps the reader's bookkeeping and `keep_alive` (the mapping) alive, so it stays
// readable after its fleet is killed. The driver never trusts the producer's bookkeeping beyond
// `head`: its read position is private, and a frame whose length, head or record is out of
// bounds or malformed is rejected with an ltx2::Error (and its space is released). A record's
// header (names, shapes, dtypes) is decoded into driver memory once; only tensor bytes stay
// shared, so a misbehaving rank can change values under a view but never its shape or bounds
// (copy a tensor first if its values must not change after you check them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "runtime/channel.h"
#include "runtime/record.h"

namespace ltx2::runtime {

class ResultReader {
 public:
  ResultReader(const FleetChannel& channel, int rank, std::shared_ptr<const void> keep_alive);

  // The next record of the ring (nullopt when empty); throws ltx2::Error on a corrupt frame.
  std::optional<Record> pop();
  // Bytes the producer has written so far (a drain can stop at a snapshot of it, so a fast
  // producer cannot keep it going forever) and bytes popped so far.
  uint64_t written() const;
  uint64_t read() const { return read_; }
  // Frames are numbered 0, 1, ... in ring order (wrap markers count). The number of the frame the
  // last pop() returned; and of the oldest frame still held by a view (frames_popped() if none).
  uint64_t last_frame() const { return frames_popped_ - 1; }
  uint64_t frames_popped() const { return frames_popped_; }
  uint64_t oldest_held_frame() const;
  // Ring bytes still reserved by popped frames (held views, or released behind a held one).
  uint64_t reserved_bytes() const;
  // Bytes the producer is waiting for (0 when it is not blocked on a full ring).
  uint64_t producer_waiting_for() const;

 private:
  struct Book;
  struct FrameLease;
  std::shared_ptr<Book> book_;
  const uint8_t* data_;
  uint64_t capacity_;
  int rank_;
  uint64_t read_ = 0;
  uint64_t frames_popped_ = 0;
};

}  // namespace ltx2::runtime
