// The GPU communicator factory registry (see device_comm.h).
#include "comm/device_comm.h"

#ifdef LTX2_WITH_NCCL
#include "comm/nccl/nccl_communicator.h"
#endif

namespace ltx2::comm {
namespace {

DeviceCommFactory& factory() {
  static DeviceCommFactory f;
  return f;
}

}  // namespace

void set_device_comm_factory(DeviceCommFactory f) {
  factory() = std::move(f);
}

std::unique_ptr<Communicator> make_device_comm(const DeviceCommInit& init) {
#ifdef LTX2_WITH_NCCL
  // NCCL is the engine unless the executable installed another one (tests do).
  if (factory() == nullptr) return make_nccl_communicator(init);
#endif
  LTX2_CHECK(factory() != nullptr,
             "rank {} owns {} but this executable has no GPU communicator; use --ranks N", init.rank,
             init.device.str());
  auto comm = factory()(init);
  LTX2_CHECK(comm != nullptr, "the GPU communicator factory returned nothing for rank {}", init.rank);
  return comm;
}

}  // namespace ltx2::comm
