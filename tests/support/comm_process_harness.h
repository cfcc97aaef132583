// A CommHarness whose ranks are forked processes over one MAP_SHARED mapping (what a fleet does):
// each child builds the shared-memory communicator of its rank, optionally an engine on top of it
// (make_engine: NCCL for GPU ranks), runs the body, and reports its outcome as a record in its part
// of the mapping. The parent never touches CUDA, so children may.
#pragma once

#include <memory>

#include "comm/shm_communicator.h"
#include "support/comm_suite.h"

namespace ltx2::test {

class ProcessCommHarness : public CommHarness {
 public:
  std::vector<RankOutcome> run(int world, std::chrono::milliseconds timeout, const CommBody& body) override;

 protected:
  // The communicator the body gets on `rank`; nullptr: the shared-memory one itself.
  virtual std::unique_ptr<comm::Communicator> make_engine(comm::ShmCommunicator& host, int rank,
                                                          std::chrono::milliseconds timeout) {
    (void)host, (void)rank, (void)timeout;
    return nullptr;
  }

 private:
  int run_rank(uint8_t* comm_base, size_t comm_bytes, uint8_t* report, size_t report_bytes, int rank,
               std::chrono::milliseconds timeout, const CommBody& body);
};

}  // namespace ltx2::test
