// See comm_process_harness.h.
#include "support/comm_process_harness.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/record.h"
#include "support/catch.h"

namespace ltx2::test {

std::vector<RankOutcome> ProcessCommHarness::run(int world, std::chrono::milliseconds timeout,
                                                 const CommBody& body) {
  const size_t slot = 8192, report = 1 << 20;  // small slots: the larger cases take several rounds
  const size_t comm_bytes = (comm::ShmCommunicator::region_bytes(world, slot) + 63) / 64 * 64;
  const size_t bytes = comm_bytes + world * report;
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED);
  auto* base = static_cast<uint8_t*>(shared);
  comm::ShmCommunicator::format_region(base, comm_bytes, world, slot);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(run_rank(base, comm_bytes, base + comm_bytes + r * report, report, r, timeout, body));
    pids.push_back(pid);
  }
  std::vector<RankOutcome> out(world);
  for (int r = 0; r < world; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    INFO("rank " << r << " process status " << status);
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    auto rec = runtime::decode_record(base + comm_bytes + r * report, report, "rank outcome");
    out[r].error = rec.meta["error"];
    out[r].comm_error = rec.meta["comm_error"];
    out[r].timeout = rec.meta["timeout"];
    out[r].seconds = rec.meta["seconds"];
    if (!rec.tensors.empty()) out[r].value = rec.tensors[0].tensor;
  }
  munmap(shared, bytes);
  return out;
}

int ProcessCommHarness::run_rank(uint8_t* comm_base, size_t comm_bytes, uint8_t* report, size_t report_bytes,
                                 int rank, std::chrono::milliseconds timeout, const CommBody& body) {
  nlohmann::json meta{{"error", ""}, {"comm_error", false}, {"timeout", false}, {"seconds", 0.0}};
  std::vector<runtime::NamedTensor> value;
  try {
    comm::ShmCommunicator host(comm_base, comm_bytes, rank, timeout);
    std::unique_ptr<comm::Communicator> engine = make_engine(host, rank, timeout);
    // Timed from here: an engine's one-time setup (NCCL's init) is not the body's.
    const auto start = std::chrono::steady_clock::now();
    try {
      value.push_back({"value", body(engine ? *engine : host).to(Device::cpu())});
    } catch (...) {
      meta["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      throw;
    }
    meta["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const comm::CommError& e) {
    meta["error"] = e.what();
    meta["comm_error"] = true;
    meta["timeout"] = dynamic_cast<const comm::CommTimeout*>(&e) != nullptr;
  } catch (const std::exception& e) {
    meta["error"] = e.what();
  }
  runtime::EncodedRecord rec(meta, std::move(value));
  if (rec.size() > report_bytes) return 1;
  rec.write(report);
  return 0;
}

}  // namespace ltx2::test
