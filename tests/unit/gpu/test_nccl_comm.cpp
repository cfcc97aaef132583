// The NCCL communicator at world size 1 on one GPU (larger worlds need a machine with several
// GPUs): bootstrap over the CPU communicator, every collective on device tensors of several
// dtypes, and CPU inputs moved to the device.
#ifdef LTX2_WITH_NCCL
#include <cstdlib>
#include <memory>

#include "comm/device_comm.h"
#include "comm/shm_communicator.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace std::chrono_literals;

namespace {

struct OneRank {
  size_t bytes = comm::ShmCommunicator::region_bytes(1, 4096);
  std::unique_ptr<void, decltype(&std::free)> region{std::aligned_alloc(64, (bytes + 63) / 64 * 64),
                                                     &std::free};
  std::unique_ptr<comm::ShmCommunicator> host;
  std::unique_ptr<comm::Communicator> gpu;
  OneRank() {
    comm::ShmCommunicator::format_region(region.get(), bytes, 1, 4096);
    host = std::make_unique<comm::ShmCommunicator>(region.get(), bytes, 0, 5000ms);
    gpu = comm::make_device_comm({0, 1, Device::cuda(0), host.get(), 10000ms});
  }
};

}  // namespace

TEST_CASE("nccl: a world of one: every collective returns its input, on the device") {
  OneRank r;
  REQUIRE(r.gpu->rank() == 0);
  REQUIRE(r.gpu->world_size() == 1);
  REQUIRE(r.gpu->device() == Device::cuda(0));
  for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
    Tensor x = test::random_tensor({3, 5}, 7).to(dt);
    Tensor xd = x.to(Device::cuda(0));
    int64_t n = x.numel();
    Tensor a2a = r.gpu->all_to_all(xd, std::vector<int64_t>{n}, std::vector<int64_t>{n});
    REQUIRE(a2a.device().is_cuda());
    REQUIRE(test::max_abs_diff(a2a.to(Device::cpu()).to(DType::F32), x.to(DType::F32).reshape({n})) == 0.f);
    Tensor g = r.gpu->all_gather(xd);
    REQUIRE(g.shape() == Shape{1, 3, 5});
    REQUIRE(test::max_abs_diff(g.to(Device::cpu()).to(DType::F32).reshape({3, 5}), x.to(DType::F32)) == 0.f);
    REQUIRE(test::max_abs_diff(r.gpu->all_reduce_sum(xd).to(Device::cpu()).to(DType::F32),
                               x.to(DType::F32)) == 0.f);
    REQUIRE(test::max_abs_diff(r.gpu->broadcast(xd, 0).to(Device::cpu()).to(DType::F32), x.to(DType::F32)) ==
            0.f);
  }
  // A CPU input is moved to the device first.
  Tensor cpu = test::random_tensor({4}, 9);
  REQUIRE(r.gpu->all_reduce_sum(cpu).device().is_cuda());
  uint64_t before = r.gpu->collectives_entered();
  r.gpu->barrier();
  REQUIRE(r.gpu->collectives_entered() > before);
  REQUIRE_THROWS_AS(r.gpu->broadcast(cpu, 1), Error);
}
#endif
