// The Communicator suite on the shared-memory engine, twice: ranks as threads over one buffer, and
// ranks as forked processes over one MAP_SHARED mapping (what a fleet does).
#include "comm/shm_communicator.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <thread>

#include "comm_suite.h"
#include "runtime/record.h"
#include "support/catch.h"

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

// Each rank is a forked child; it reports its outcome as a record in its part of a shared buffer.
class ShmProcessHarness : public ltx2::test::CommHarness {
 public:
  std::vector<ltx2::test::RankOutcome> run(int world, std::chrono::milliseconds timeout,
                                           const ltx2::test::CommBody& body) override {
    const size_t slot = 8192, report = 1 << 20;
    const size_t comm_bytes = (ShmCommunicator::region_bytes(world, slot) + 63) / 64 * 64;
    const size_t bytes = comm_bytes + world * report;
    void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(shared != MAP_FAILED);
    auto* base = static_cast<uint8_t*>(shared);
    ShmCommunicator::format_region(base, comm_bytes, world, slot);
    std::vector<pid_t> pids;
    for (int r = 0; r < world; ++r) {
      const pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0)
        _exit(run_rank(base, comm_bytes, base + comm_bytes + r * report, report, r, timeout, body));
      pids.push_back(pid);
    }
    std::vector<ltx2::test::RankOutcome> out(world);
    for (int r = 0; r < world; ++r) {
      int status = 0;
      waitpid(pids[r], &status, 0);
      INFO("rank " << r << " process status " << status);
      REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
      auto rec = ltx2::runtime::decode_record(base + comm_bytes + r * report, report, "rank outcome");
      out[r].error = rec.meta["error"];
      out[r].comm_error = rec.meta["comm_error"];
      out[r].timeout = rec.meta["timeout"];
      out[r].seconds = rec.meta["seconds"];
      if (!rec.tensors.empty()) out[r].value = rec.tensors[0].tensor;
    }
    munmap(shared, bytes);
    return out;
  }

 private:
  static int run_rank(uint8_t* comm_base, size_t comm_bytes, uint8_t* report, size_t report_bytes, int r,
                      std::chrono::milliseconds timeout, const ltx2::test::CommBody& body) {
    const auto start = std::chrono::steady_clock::now();
    nlohmann::json meta{{"error", ""}, {"comm_error", false}, {"timeout", false}};
    std::vector<ltx2::runtime::NamedTensor> value;
    try {
      ShmCommunicator comm(comm_base, comm_bytes, r, timeout);
      value.push_back({"value", body(comm)});
    } catch (const ltx2::comm::CommError& e) {
      meta["error"] = e.what();
      meta["comm_error"] = true;
      meta["timeout"] = dynamic_cast<const ltx2::comm::CommTimeout*>(&e) != nullptr;
    } catch (const std::exception& e) {
      meta["error"] = e.what();
    }
    meta["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ltx2::runtime::EncodedRecord rec(meta, std::move(value));
    if (rec.size() > report_bytes) return 1;
    rec.write(report);
    return 0;
  }
};

}  // namespace

LTX2_COMM_SUITE(ShmThreadHarness, "shm")
LTX2_COMM_SUITE(ShmProcessHarness, "shm processes")

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
