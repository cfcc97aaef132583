// See multigpu_support.h.
#include "multigpu_support.h"

#include <cstdio>
#include <memory>

#include "fleet/fleet_support.h"
#include "runtime/launcher.h"
#include "support/catch.h"

namespace ltx2::test {

int require_gpus(int at_least) {
  const int n = runtime::visible_gpu_count();
  INFO("the multi-GPU tests need " << at_least << " GPUs; " << n << " visible");
  REQUIRE(n >= at_least);
  return n;
}

runtime::FleetOptions gpu_fleet_options(int gpus, const std::string& runner, const nlohmann::json& setup) {
  runtime::FleetOptions o = fleet_options(1, setup);
  std::vector<int> indices;
  for (int g = 0; g < gpus; ++g) indices.push_back(g);
  o.devices = runtime::plan_devices(indices, 0);
  o.runner = runner;
  o.sizes.ring_capacity = 64 << 20;
  o.sizes.job_capacity = 16 << 20;
  // CUDA contexts and NCCL's init take seconds; a collective on NVLink takes milliseconds.
  o.ready_timeout = std::chrono::seconds(120);
  o.heartbeat_timeout = std::chrono::seconds(10);
  o.collective_timeout = std::chrono::seconds(5);
  o.graceful_timeout = std::chrono::seconds(10);
  return o;
}

std::vector<int> gpu_process_pids() {
  struct Closer {
    void operator()(FILE* f) const { pclose(f); }
  };
  std::unique_ptr<FILE, Closer> p(
      popen("nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null", "r"));
  REQUIRE(p != nullptr);
  std::vector<int> pids;
  int pid = 0;
  while (std::fscanf(p.get(), "%d", &pid) == 1) pids.push_back(pid);
  return pids;
}

}  // namespace ltx2::test
