// The Communicator suite (tests/support/comm_suite.h) on the NCCL engine: one forked process per
// visible GPU, each bootstrapping NCCL over the shared-memory communicator of its rank, as a fleet's
// GPU worker does.
#include "comm/device_comm.h"
#include "multigpu_support.h"
#include "support/catch.h"
#include "support/comm_process_harness.h"

namespace {

class NcclProcessHarness : public ltx2::test::ProcessCommHarness {
 public:
  int world() const override { return ltx2::test::require_gpus(2); }
  bool sums_in_rank_order() const override { return world() <= 2; }  // NCCL's rings beyond two

 protected:
  std::unique_ptr<ltx2::comm::Communicator> make_engine(ltx2::comm::ShmCommunicator& host, int rank,
                                                        std::chrono::milliseconds timeout) override {
    return ltx2::comm::make_device_comm({rank, host.world_size(), ltx2::Device::cuda(rank), &host, timeout});
  }
};

}  // namespace

LTX2_COMM_SUITE(NcclProcessHarness, "nccl")
