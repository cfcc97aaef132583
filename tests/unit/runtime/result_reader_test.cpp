// The driver's zero-copy result reader within one process: views into the ring, out-of-order
// release, wrap-around with views held, backpressure on a producer thread, corrupt frames.
#include "runtime/result_reader.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "core/error.h"
#include "support/catch.h"

namespace {

using namespace ltx2;
using namespace ltx2::runtime;

struct Ring {
  ChannelSizes sizes;
  std::shared_ptr<uint8_t> mem;
  FleetChannel ch;

  explicit Ring(size_t ring_bytes) {
    sizes.world = 1;
    sizes.setup_capacity = 4096;
    sizes.job_slots = 1;
    sizes.job_capacity = 4096;
    sizes.ring_capacity = ring_bytes;
    sizes.comm_slot_capacity = 4096;
    const size_t bytes = FleetChannel::region_bytes(sizes);
    mem.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)), &std::free);
    std::memset(mem.get(), 0, bytes);
    ch = FleetChannel::format(mem.get(), bytes, sizes, EncodedRecord({{"runner", "x"}}, {}),
                              std::chrono::milliseconds(50), std::chrono::milliseconds(100));
  }
  // Pushes a record of `n` floats all equal to `value`; false when the ring is full.
  bool push(int64_t n, float value) {
    try {
      ch.push_result(0, EncodedRecord({{"v", value}}, {{"t", Tensor::full({n}, value)}}),
                     [] { return false; });
      return true;
    } catch (const Error&) {
      return false;
    }
  }
  uint64_t tail() const { return ch.ring(0)->tail.load(); }
  uint64_t head() const { return ch.ring(0)->head.load(); }
};

bool all_equal(const Tensor& t, float value) {
  for (float x : t.to_vector())
    if (x != value) return false;
  return true;
}

TEST_CASE("result reader: tensors are views into the ring, 64-byte aligned, released when dropped") {
  Ring ring(1 << 16);
  ResultReader reader(ring.ch, 0, nullptr);
  REQUIRE(ring.push(1000, 7));
  auto rec = reader.pop();
  REQUIRE(rec);
  const Tensor& t = rec->tensor("t");
  const auto* base = ring.ch.ring_data(0);
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  REQUIRE((p > base && p < base + (1 << 16)));  // in the ring: no copy was made
  REQUIRE(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  REQUIRE(all_equal(t, 7));
  REQUIRE(ring.tail() == 0);
  REQUIRE(reader.reserved_bytes() == ring.head());
  rec.reset();
  REQUIRE(ring.tail() == ring.head());
  REQUIRE(reader.reserved_bytes() == 0);
}

TEST_CASE("result reader: a view outlives the next results, the tail waits for the oldest") {
  Ring ring(1 << 16);
  ResultReader reader(ring.ch, 0, nullptr);
  REQUIRE(ring.push(100, 1));
  REQUIRE(ring.push(100, 2));
  REQUIRE(ring.push(100, 3));
  Tensor first = reader.pop()->tensor("t");
  const uint64_t after_first = reader.read();
  Tensor second = reader.pop()->tensor("t");
  reader.pop();  // the third, dropped at once
  REQUIRE(reader.oldest_held_frame() == 0);
  second = Tensor();
  REQUIRE(ring.tail() == 0);  // released behind a held frame: still reserved
  REQUIRE(reader.reserved_bytes() == ring.head());
  REQUIRE(all_equal(first, 1));
  first = Tensor();
  REQUIRE(ring.tail() == ring.head());  // everything released at once
  REQUIRE(after_first < ring.head());
  REQUIRE(reader.oldest_held_frame() == reader.frames_popped());
}

TEST_CASE("result reader: a view held across wrap-arounds keeps its data, the ring pushes back") {
  Ring ring(4096);
  ResultReader reader(ring.ch, 0, nullptr);
  Tensor held;  // the newest view of the previous round
  float held_value = -1, value = 0;
  for (int round = 0; round < 50; ++round) {
    // Fill the ring around the held view: the producer must not write over it.
    int pushed = 0;
    while (ring.push(150, value + static_cast<float>(pushed))) ++pushed;
    REQUIRE(pushed >= 1);
    REQUIRE(ring.ch.ring(0)->waiting_for.load() > 0);  // the refused push said what it needed
    if (held.defined()) REQUIRE(all_equal(held, held_value));
    for (int k = 0; k < pushed; ++k) {
      auto rec = reader.pop();
      REQUIRE(rec);
      REQUIRE(rec->meta["v"] == value + static_cast<float>(k));
      held = rec->tensor("t");
      held_value = value + static_cast<float>(k);
    }
    REQUIRE_FALSE(reader.pop());
    value += static_cast<float>(pushed);
  }
  REQUIRE(ring.head() > 10 * 4096);  // wrapped many times
  REQUIRE(ring.tail() < ring.head());
  held = Tensor();
  REQUIRE(ring.tail() == ring.head());
}

TEST_CASE("result reader: a producer thread waits while views are held and resumes when dropped") {
  Ring ring(8192);
  ResultReader reader(ring.ch, 0, nullptr);
  constexpr int kRecords = 40;
  std::atomic<int> produced{0};
  std::atomic<bool> saw_wait{false};
  std::thread producer([&] {
    for (int i = 0; i < kRecords; ++i) {
      ring.ch.push_result(0, EncodedRecord({{"i", i}}, {{"t", Tensor::full({400}, static_cast<float>(i))}}),
                          [&] {
                            saw_wait = true;
                            return true;
                          });
      ++produced;
    }
  });
  std::vector<Tensor> held;
  int got = 0;
  while (got < kRecords) {
    auto rec = reader.pop();
    if (!rec) {
      // Make room only once the producer is blocked (or done), so it must have waited.
      if (ring.ch.ring(0)->waiting_for.load() > 0 || produced.load() == kRecords) held.clear();
      std::this_thread::yield();
      continue;
    }
    REQUIRE(rec->meta["i"] == got);
    held.push_back(rec->tensor("t"));
    ++got;
    // Holding views bounds the producer: it cannot run ahead of the ring.
    REQUIRE(ring.head() - ring.tail() <= 8192);
  }
  producer.join();
  REQUIRE(saw_wait.load());
  for (size_t i = 0; i < held.size(); ++i)
    REQUIRE(all_equal(held[i],
                      static_cast<float>(kRecords - static_cast<int>(held.size()) + static_cast<int>(i))));
}

TEST_CASE("result reader: views outlive the reader and the region's owner") {
  auto ring = std::make_unique<Ring>(4096);
  std::weak_ptr<uint8_t> region = ring->mem;
  Tensor kept;
  {
    ResultReader reader(ring->ch, 0, ring->mem);
    REQUIRE(ring->push(10, 5));
    kept = reader.pop()->tensor("t");
  }
  ring.reset();
  REQUIRE_FALSE(region.expired());  // the view keeps the memory mapped
  REQUIRE(all_equal(kept, 5));
  kept = Tensor();
  REQUIRE(region.expired());
}

TEST_CASE("result reader: corrupt frames are rejected, never read out of bounds") {
  Ring ring(4096);
  RingHeader* h = ring.ch.ring(0);
  uint8_t* data = ring.ch.ring_data(0);
  SECTION("a head beyond the ring") {
    ResultReader reader(ring.ch, 0, nullptr);
    h->head.store(8192);
    REQUIRE_THROWS_WITH(reader.pop(), Catch::Matchers::Contains("unread bytes in a ring of"));
  }
  SECTION("a frame longer than the written data") {
    ResultReader reader(ring.ch, 0, nullptr);
    REQUIRE(ring.push(10, 1));
    const uint64_t huge = 1ull << 40;
    std::memcpy(data, &huge, 8);
    REQUIRE_THROWS_WITH(reader.pop(),
                        Catch::Matchers::Contains("corrupt result record from rank 0: frame of"));
  }
  SECTION("a record that does not decode gives its space back") {
    ResultReader reader(ring.ch, 0, nullptr);
    REQUIRE(ring.push(10, 1));
    data[kRingFrameHeader] ^= 0xff;  // the record's magic
    REQUIRE_THROWS_WITH(reader.pop(), Catch::Matchers::Contains("bad magic"));
    REQUIRE(ring.tail() == ring.head());
  }
  SECTION("a wrap marker past the written data") {
    ResultReader reader(ring.ch, 0, nullptr);
    std::memcpy(data, &kRingWrap, 8);
    h->head.store(64);
    REQUIRE_THROWS_WITH(reader.pop(), Catch::Matchers::Contains("wrap past the written data"));
  }
}

}  // namespace

TEST_CASE("result reader: random damage to a ring is rejected or read in bounds, never a crash") {
  std::mt19937_64 rng(1234);
  int rejected = 0, read = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Ring ring(4096);
    ResultReader reader(ring.ch, 0, nullptr);
    for (int k = 0; k < 3; ++k) REQUIRE(ring.push(1 + static_cast<int64_t>(rng() % 100), 1));
    uint8_t* data = ring.ch.ring_data(0);
    for (int flips = 0; flips < 1 + trial % 8; ++flips) {
      const size_t at = trial % 2 ? rng() % 64 : rng() % 4096;  // odd trials hit the first frame header
      data[at] = static_cast<uint8_t>(rng());
    }
    if (trial % 5 == 0) ring.ch.ring(0)->head.store(rng() % 8192);
    try {
      while (auto rec = reader.pop()) {
        for (const auto& t : rec->tensors) {
          const auto* p = static_cast<const uint8_t*>(t.tensor.data_ptr());
          REQUIRE(p >= data);
          REQUIRE(p + t.tensor.nbytes() <= data + 4096);
        }
        ++read;
      }
    } catch (const Error&) {
      ++rejected;
    }
  }
  REQUIRE(rejected > 50);
  REQUIRE(read > 50);
}
