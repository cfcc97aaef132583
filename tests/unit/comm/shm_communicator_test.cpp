// The Communicator suite on the shared-memory engine, twice: ranks as threads over one buffer, and
// ranks as forked processes over one MAP_SHARED mapping (what a fleet does).
#include "comm/shm_communicator.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/catch.h"
#include "support/comm_process_harness.h"
#include "support/comm_suite.h"

namespace {

using ltx2::comm::ShmCommunicator;

class ShmThreadHarness : public ltx2::test::CommHarness {
 public:
  std::vector<ltx2::test::RankOutcome> run(int world, std::chrono::milliseconds timeout,
                                           const ltx2::test::CommBody& body) override {
    const size_t slot = 8192;  // small slots so the suite's larger cases take several rounds
    const size_t bytes = ShmCommunicator::region_bytes(world, slot);
    std::unique_ptr<void, decltype(&std::free)> region(std::aligned_alloc(64, (bytes + 63) / 64 * 64),
                                                       &std::free);
    ShmCommunicator::format_region(region.get(), bytes, world, slot);
    std::vector<ltx2::test::RankOutcome> out(world);
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r] {
        const auto start = std::chrono::steady_clock::now();
        try {
          ShmCommunicator comm(region.get(), bytes, r, timeout);
          out[r].value = body(comm);
        } catch (const ltx2::comm::CommError& e) {
          out[r].error = e.what();
          out[r].comm_error = true;
          out[r].timeout = dynamic_cast<const ltx2::comm::CommTimeout*>(&e) != nullptr;
        } catch (const std::exception& e) {
          out[r].error = e.what();
        }
        out[r].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      });
    }
    for (auto& t : threads) t.join();
    return out;
  }
};

}  // namespace

LTX2_COMM_SUITE(ShmThreadHarness, "shm")
LTX2_COMM_SUITE(ltx2::test::ProcessCommHarness, "shm processes")

TEST_CASE("shm: a region that is too small or unformatted is refused") {
  std::vector<uint64_t> buf(1024, 0);
  REQUIRE_THROWS_WITH(ShmCommunicator(buf.data(), buf.size() * 8, 0, std::chrono::milliseconds(10)),
                      Catch::Matchers::Contains("not formatted"));
  REQUIRE_THROWS_WITH(ShmCommunicator::format_region(buf.data(), buf.size() * 8, 2, 1024),
                      Catch::Matchers::Contains("too small"));
}

TEST_CASE("shm: a communicator refuses calls after it failed") {
  const size_t bytes = ShmCommunicator::region_bytes(1, 4096);
  std::vector<uint64_t> buf(bytes / 8 + 1);
  ShmCommunicator::format_region(buf.data(), bytes, 1, 4096);
  ShmCommunicator::abort(buf.data(), "driver declared the fleet broken");
  ShmCommunicator comm(buf.data(), bytes, 0, std::chrono::milliseconds(100));
  REQUIRE_THROWS_WITH(comm.barrier(), Catch::Matchers::Contains("driver declared the fleet broken"));
  REQUIRE_THROWS_WITH(comm.barrier(), Catch::Matchers::Contains("failed earlier"));
}

namespace {

using ltx2::comm::CommHeader;
using ltx2::comm::CommSlot;

// Rank 0 all-reduces 16 floats over a 2-rank region whose rank 1 the test plays: once rank 0 has
// published, rank 1 publishes rank 0's signature and chunk, changed by `scribble`. Returns rank
// 0's error.
std::string all_reduce_with_bad_peer(const std::function<void(CommSlot&)>& scribble) {
  const size_t capacity = 4096;
  const size_t bytes = ShmCommunicator::region_bytes(2, capacity);
  std::vector<uint64_t> buf(bytes / 8 + 1);
  ShmCommunicator::format_region(buf.data(), bytes, 2, capacity);
  std::string error;
  std::thread rank0([&] {
    ShmCommunicator comm(buf.data(), bytes, 0, std::chrono::seconds(5));
    try {
      comm.all_reduce_sum(ltx2::Tensor::full({16}, 1.f));
    } catch (const ltx2::comm::CommError& e) {
      error = e.what();
    }
  });
  const CommSlot* theirs = ltx2::comm::comm_slot(buf.data(), capacity, 0);
  CommSlot* mine = ltx2::comm::comm_slot(buf.data(), capacity, 1);
  while (theirs->published.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  mine->op = theirs->op;
  mine->dtype = theirs->dtype;
  mine->meta0 = theirs->meta0;
  mine->meta1 = theirs->meta1;
  mine->total_bytes = theirs->total_bytes;
  mine->chunk_offset = theirs->chunk_offset;
  mine->chunk_bytes = theirs->chunk_bytes;
  scribble(*mine);
  mine->published.store(1);
  ltx2::comm::bump_and_wake(&reinterpret_cast<CommHeader*>(buf.data())->changed);
  rank0.join();
  return error;
}

}  // namespace

TEST_CASE("shm: a peer's chunk outside the layout every rank computes is an error naming it, not a read") {
  using Catch::Matchers::Contains;
  REQUIRE(all_reduce_with_bad_peer([](CommSlot&) {}).empty());  // played faithfully, rank 1 is fine
  REQUIRE_THAT(all_reduce_with_bad_peer([](CommSlot& s) { s.chunk_bytes = 1 << 30; }),
               Contains("all_reduce_sum: rank 1 published 1073741824 bytes at stream offset 0 where 64 at 0 "
                        "were expected"));
  REQUIRE_THAT(all_reduce_with_bad_peer([](CommSlot& s) { s.chunk_offset = uint64_t{1} << 40; }),
               Contains("rank 1 published 64 bytes at stream offset 1099511627776"));
  REQUIRE_THAT(all_reduce_with_bad_peer([](CommSlot& s) {
                 s.total_bytes = 4096;  // a stream longer than the tensor, in chunks that agree with it
                 s.chunk_bytes = 4096;
               }),
               Contains("rank 1 published a stream of 4096 bytes where 64 were expected"));
}

TEST_CASE("shm: a header scribbled over before a rank attaches is refused, in one line") {
  const size_t bytes = ShmCommunicator::region_bytes(2, 4096);
  std::vector<uint64_t> buf(bytes / 8 + 1);
  auto* h = reinterpret_cast<CommHeader*>(buf.data());
  const auto refused = [&](const std::function<void()>& scribble) {
    ShmCommunicator::format_region(buf.data(), bytes, 2, 4096);
    scribble();
    REQUIRE_THROWS_WITH(ShmCommunicator(buf.data(), bytes, 0, std::chrono::milliseconds(10)),
                        Catch::Matchers::Contains("shm communicator: the region's header") &&
                            Catch::Matchers::Contains("does not fit its"));
  };
  refused([&] { h->slot_capacity = 0; });
  refused([&] { h->slot_capacity = 4100; });  // not whole 64-byte lines
  refused([&] { h->slot_capacity = uint64_t{1} << 62; });
  refused([&] { h->world = 0; });
  refused([&] { h->world = 3; });  // a third slot the region does not have
}

TEST_CASE("shm: an abort reason without its terminating zero is read within its field") {
  const size_t bytes = ShmCommunicator::region_bytes(1, 4096);
  std::vector<uint64_t> buf(bytes / 8 + 1);
  ShmCommunicator::format_region(buf.data(), bytes, 1, 4096);
  ShmCommunicator comm(buf.data(), bytes, 0, std::chrono::milliseconds(100));
  ShmCommunicator::abort(buf.data(), "short");
  auto* h = reinterpret_cast<CommHeader*>(buf.data());
  auto* end = reinterpret_cast<char*>(h) + 256;  // the header's padding too
  std::fill(h->abort_reason, end, 'x');
  try {
    comm.barrier();
    FAIL("the barrier must throw");
  } catch (const ltx2::comm::CommError& e) {
    const std::string what = e.what();
    REQUIRE(std::count(what.begin(), what.end(), 'x') == sizeof(h->abort_reason));
  }
}
