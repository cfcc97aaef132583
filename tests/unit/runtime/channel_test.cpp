// The fleet channel within one process: job slots, result rings (wrap-around, back-pressure),
// error records.
#include "runtime/channel.h"

#include <cstdlib>
#include <functional>
#include <memory>

#include "core/error.h"
#include "runtime/result_reader.h"
#include "support/catch.h"

namespace {

using namespace ltx2;
using namespace ltx2::runtime;

struct Region {
  ChannelSizes sizes;
  std::unique_ptr<uint8_t, decltype(&std::free)> mem{nullptr, &std::free};
  FleetChannel ch;

  explicit Region(int world, size_t ring = 4096, size_t slots = 2, int node_ranks = 0) {
    sizes.world = world;
    sizes.node_ranks = node_ranks;
    sizes.setup_capacity = 4096;
    sizes.job_slots = slots;
    sizes.job_capacity = 4096;
    sizes.ring_capacity = ring;
    sizes.comm_slot_capacity = 4096;
    const size_t bytes = FleetChannel::region_bytes(sizes);
    mem.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
    std::fill(mem.get(), mem.get() + bytes, 0);
    ch = FleetChannel::format(mem.get(), bytes, sizes,
                              EncodedRecord({{"runner", "x"}, {"config", {{"k", 1}}}}, {}),
                              std::chrono::milliseconds(50), std::chrono::milliseconds(100));
  }
};

TEST_CASE("channel: the setup record and layout are readable by an attaching worker") {
  Region r(3);
  FleetChannel w = FleetChannel::attach(r.mem.get(), FleetChannel::region_bytes(r.sizes));
  REQUIRE(w.world() == 3);
  REQUIRE(w.setup_record().meta["config"]["k"] == 1);
  std::vector<uint8_t> junk(sizeof(ControlBlock), 0);
  REQUIRE_THROWS_WITH(FleetChannel::attach(junk.data(), junk.size()),
                      Catch::Matchers::Contains("not a version"));
}

TEST_CASE("channel: a worker refuses a header whose sizes do not fit the region, in one line") {
  const size_t bytes = FleetChannel::region_bytes(Region(2).sizes);
  const auto refused = [&](const std::function<void(ControlBlock&)>& scribble) {
    Region r(2);
    scribble(r.ch.control());
    REQUIRE_THROWS_WITH(FleetChannel::attach(r.mem.get(), bytes),
                        Catch::Matchers::Contains("fleet channel: the region's header") &&
                            Catch::Matchers::Contains("does not fit its"));
  };
  refused([](ControlBlock& cb) { cb.job_slots = 0; });
  refused([](ControlBlock& cb) { cb.job_slots = 1u << 30; });
  refused([](ControlBlock& cb) { cb.world = 0; });
  refused([](ControlBlock& cb) { cb.world = kMaxRanks + 1; });
  refused([](ControlBlock& cb) { cb.ring_capacity = ~0ull; });
  refused([](ControlBlock& cb) { cb.job_capacity = ~0ull - 10; });
  refused([](ControlBlock& cb) { cb.comm_slot_capacity = 1ull << 40; });
  refused([](ControlBlock& cb) { cb.setup_bytes = cb.setup_capacity + 1; });
  refused([](ControlBlock& cb) { cb.ring_capacity += 64; });  // one ring more than the region holds
  refused([](ControlBlock& cb) { cb.node_ranks = 0; });
  refused([](ControlBlock& cb) { cb.node_ranks = 3; });  // does not divide 2 ranks
}

// The communicator block: the world's region first, then the group regions of the cuts the nodes
// allow (lib/comm/shm_comm_set.h), the same for the driver and an attaching worker.
TEST_CASE("channel: the communicator block holds the group regions of the ranks a node runs") {
  Region one_node(8), two_nodes(8, 4096, 2, 4), four_nodes(8, 4096, 2, 2);
  CHECK(one_node.ch.comm_set().cuts() == std::vector<int>{2, 4});
  CHECK(two_nodes.ch.comm_set().cuts() == std::vector<int>{2, 4});
  CHECK(four_nodes.ch.comm_set().cuts() == std::vector<int>{4});  // groups of 4 would span 2 nodes
  FleetChannel worker =
      FleetChannel::attach(four_nodes.mem.get(), FleetChannel::region_bytes(four_nodes.sizes));
  CHECK(worker.comm_set().cuts() == std::vector<int>{4});
  CHECK(worker.comm_bytes() == comm::ShmCommunicator::region_bytes(8, 4096));
  CHECK(FleetChannel::region_bytes(four_nodes.sizes) < FleetChannel::region_bytes(one_node.sizes));
  ChannelSizes bad = four_nodes.sizes;
  bad.node_ranks = 3;
  REQUIRE_THROWS_WITH(FleetChannel::region_bytes(bad), Catch::Matchers::Contains("3 ranks a node"));
  // abort_comms reaches the world's region and every group's.
  worker.abort_comms("rank 5 failed");
  comm::ShmCommunicator group(
      static_cast<uint8_t*>(worker.comm_base()) + worker.comm_set().group_region(4, 3)->offset,
      worker.comm_set().group_region(4, 3)->bytes, 1, std::chrono::milliseconds(100));
  REQUIRE_THROWS_WITH(group.barrier(), Catch::Matchers::Contains("communicator aborted: rank 5 failed"));
  comm::ShmCommunicator world(worker.comm_base(), worker.comm_bytes(), 0, std::chrono::milliseconds(100));
  REQUIRE_THROWS_WITH(world.barrier(), Catch::Matchers::Contains("communicator aborted: rank 5 failed"));
}

TEST_CASE("channel: the layout is kept apart, so a rank scribbling over the header moves nothing") {
  Region r(2);
  const auto job = EncodedRecord({{"n", 1}}, {}).bytes();
  void* comm = r.ch.comm_base();
  RingHeader* ring = r.ch.ring(1);
  FleetChannel worker = FleetChannel::attach(r.mem.get(), FleetChannel::region_bytes(r.sizes));
  ControlBlock& cb = r.ch.control();
  cb.world = 1000;
  cb.job_slots = 0;  // the driver used to divide by it
  cb.setup_capacity = cb.job_capacity = cb.ring_capacity = cb.comm_slot_capacity = ~0ull;
  cb.setup_bytes = ~0ull;
  cb.jobs_posted.store(77);
  for (FleetChannel* ch : {&r.ch, &worker}) {
    REQUIRE(ch->world() == 2);
    REQUIRE(ch->comm_base() == comm);
    REQUIRE(ch->ring(1) == ring);
    REQUIRE(ch->ring_capacity() == 4096);
  }
  REQUIRE(worker.setup_record().meta["config"]["k"] == 1);
  REQUIRE(r.ch.try_post_job(1, 100, 0, job));  // the driver counts the jobs it posted itself
  REQUIRE(r.ch.try_post_job(2, 101, 0, job));
  REQUIRE_FALSE(r.ch.try_post_job(3, 102, 0, job));
  ResultReader reader(r.ch, 1, nullptr);
  worker.push_result(1, EncodedRecord({{"i", 5}}, {}), [] { return false; });
  auto rec = reader.pop();
  REQUIRE(rec);
  REQUIRE(rec->meta["i"] == 5);
}

TEST_CASE("channel: a job slot is reused only once every rank finished the job it held") {
  Region r(2);
  const auto job = EncodedRecord({{"n", 1}}, {}).bytes();
  REQUIRE(r.ch.try_post_job(1, 100, 0, job));
  REQUIRE(r.ch.try_post_job(2, 101, 0, job));
  REQUIRE_FALSE(r.ch.try_post_job(3, 102, 0, job));  // 2 slots, both in use
  r.ch.rank(0).jobs_done.store(1);
  REQUIRE_FALSE(r.ch.try_post_job(3, 102, 0, job));  // rank 1 still on job 1
  r.ch.rank(1).jobs_done.store(1);
  REQUIRE(r.ch.try_post_job(3, 102, 1, job));
  auto posted = r.ch.posted_job(3);
  REQUIRE(posted);
  REQUIRE(posted->job_id == 102);
  REQUIRE(posted->attempt == 1);
  REQUIRE(decode_record(posted->record, posted->bytes, "job").meta["n"] == 1);
  REQUIRE_FALSE(r.ch.posted_job(4));
  REQUIRE_THROWS_WITH(r.ch.posted_job(1), Catch::Matchers::Contains("holds job 3 where job 1 was expected"));
  REQUIRE_THROWS_WITH(r.ch.try_post_job(5, 104, 0, job), Catch::Matchers::Contains("out of order"));
  REQUIRE_THROWS_WITH(r.ch.try_post_job(4, 103, 0, std::vector<uint8_t>(5000)),
                      Catch::Matchers::Contains("exceeds the job slot"));
}

TEST_CASE("channel: result rings keep order across many wrap-arounds") {
  Region r(2, 4096);
  ResultReader reader0(r.ch, 0, nullptr), reader1(r.ch, 1, nullptr);
  int pushed = 0, popped = 0;
  auto never_wait = [] { return false; };
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 1 + round % 4; ++k) {
      const int64_t n = 1 + (round * 7 + k) % 90;  // records of 64 to ~500 bytes
      r.ch.push_result(1,
                       EncodedRecord({{"i", pushed}}, {{"t", Tensor::full({n}, static_cast<float>(pushed))}}),
                       never_wait);
      ++pushed;
    }
    while (auto rec = reader1.pop()) {
      REQUIRE(rec->meta["i"] == popped);
      REQUIRE(rec->tensors.at(0).tensor.item({0}) == static_cast<float>(popped));
      ++popped;
    }
  }
  REQUIRE(popped == pushed);
  REQUIRE_FALSE(reader0.pop());
}

TEST_CASE("channel: a full ring pushes back and an oversized result is refused") {
  Region r(1, 4096);
  ResultReader reader(r.ch, 0, nullptr);
  int waited = 0;
  auto give_up_after_one_wait = [&] { return waited++ == 0; };
  REQUIRE_THROWS_WITH(
      r.ch.push_result(0, EncodedRecord({}, {{"t", Tensor::zeros({1000})}}), give_up_after_one_wait),
      Catch::Matchers::Contains("does not fit the result ring"));
  int pushed = 0;
  try {
    for (;; ++pushed)
      r.ch.push_result(0, EncodedRecord({}, {{"t", Tensor::zeros({100})}}), [] { return false; });
  } catch (const Error& e) {
    REQUIRE_THAT(e.what(), Catch::Matchers::Contains("gave up waiting for space"));
  }
  REQUIRE(pushed >= 4);
  REQUIRE(reader.pop());  // popped and dropped at once: its space is free
  r.ch.push_result(0, EncodedRecord({}, {{"t", Tensor::zeros({100})}}), [] { return false; });  // room again
}

TEST_CASE("channel: a rank's progress notes carry the time and what it did, cut to their field") {
  Region r(2);
  REQUIRE(r.ch.activity_of(1).empty());
  const uint64_t before = monotonic_ns();
  r.ch.note_progress(1, "job 3: stage1 2/8");
  REQUIRE(r.ch.rank(1).progress_ns.load() >= before);
  REQUIRE(r.ch.activity_of(1) == "job 3: stage1 2/8");
  REQUIRE(r.ch.rank(0).progress_ns.load() == 0);
  r.ch.note_progress(1, std::string(100, 'y'));
  REQUIRE(r.ch.activity_of(1) == std::string(kActivityWords * 8 - 1, 'y'));
  r.ch.rank(1).activity_seq.store(1);  // a writer that never finished: nothing to report
  REQUIRE(r.ch.activity_of(1).empty());
}

TEST_CASE("channel: the first fatal error of a rank is the one kept") {
  Region r(2);
  REQUIRE(r.ch.error_of(1).empty());
  r.ch.record_error(1, "first");
  r.ch.record_error(1, "second");
  REQUIRE(r.ch.error_of(1) == "first");
  r.ch.record_error(0, std::string(2000, 'x'));
  REQUIRE(r.ch.error_of(0).size() == sizeof(RankBlock::error) - 1);
}

}  // namespace
