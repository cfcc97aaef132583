// The Communicator suite on the shared-memory engine, twice: ranks as threads over one buffer, and
// ranks as forked processes over one MAP_SHARED mapping (what a fleet does).
#include "comm/shm_communicator.h"

#include <cstdlib>
#include <memory>
#include <thread>

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
