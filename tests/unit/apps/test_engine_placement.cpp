// The default-device rule (apps/common/engine_factory.h): where a job runs for every combination of
// flags on a CPU-only build, a CUDA build without a visible GPU, and machines with 1 and 4 GPUs.
#include "common/engine_factory.h"
#include "support/catch.h"

using namespace ltx2;
using namespace ltx2::cli;

namespace {

GenerationFlags flags_with(const std::string& device, const std::string& gpus = "", int ranks = 0,
                           int retries = 0) {
  GenerationFlags f;
  f.device = device;
  f.gpus = gpus;
  f.ranks = ranks;
  f.retries = retries;
  return f;
}

void require_devices(const EnginePlacement& p, const std::vector<Device>& want, bool fleet) {
  REQUIRE(p.devices == want);
  REQUIRE(p.fleet == fleet);
}

}  // namespace

TEST_CASE("placement: no flag runs on every visible GPU of a CUDA build, else on the CPU") {
  require_devices(plan_placement(flags_with("auto"), false, 0), {Device::cpu()}, false);
  require_devices(plan_placement(flags_with("auto"), false, 4), {Device::cpu()}, false);  // no CUDA backend
  require_devices(plan_placement(flags_with("auto"), true, 0), {Device::cpu()}, false);
  const EnginePlacement one = plan_placement(flags_with("auto"), true, 1);
  require_devices(one, {Device::cuda(0)}, false);  // one GPU: in this process
  REQUIRE(one.describe() == "cuda:0 in this process, bf16 (every visible GPU)");
  const EnginePlacement four = plan_placement(flags_with("auto"), true, 4);
  require_devices(four, {Device::cuda(0), Device::cuda(1), Device::cuda(2), Device::cuda(3)}, true);
  REQUIRE(four.describe() == "4 GPUs (cuda:0,1,2,3), one worker process each, bf16 (every visible GPU)");
  REQUIRE(plan_placement(flags_with("auto"), true, 0).describe() ==
          "the CPU in this process, float32 (no GPU visible)");
  REQUIRE(plan_placement(flags_with("auto"), false, 0).describe() ==
          "the CPU in this process, float32 (built without CUDA)");
}

TEST_CASE("placement: --device cpu, --device cuda[:N], --gpus and --ranks") {
  require_devices(plan_placement(flags_with("cpu"), true, 4), {Device::cpu()}, false);
  require_devices(plan_placement(flags_with("cuda"), true, 2), {Device::cuda(0), Device::cuda(1)}, true);
  require_devices(plan_placement(flags_with("cuda:1"), true, 2), {Device::cuda(1)}, false);
  require_devices(plan_placement(flags_with("auto", "2"), true, 4), {Device::cuda(2)}, false);
  require_devices(plan_placement(flags_with("auto", "3,1"), true, 4), {Device::cuda(3), Device::cuda(1)},
                  true);
  require_devices(plan_placement(flags_with("auto", "", 3), true, 4),
                  {Device::cpu(), Device::cpu(), Device::cpu()}, true);
  REQUIRE(plan_placement(flags_with("auto", "", 2), true, 0).describe() ==
          "2 CPU worker processes, float32 (--ranks)");
}

TEST_CASE("placement: --retries runs even one device as a restartable worker process") {
  require_devices(plan_placement(flags_with("auto", "", 0, 1), true, 1), {Device::cuda(0)}, true);
  require_devices(plan_placement(flags_with("cpu", "", 0, 2), true, 1), {Device::cpu()}, true);
  REQUIRE(plan_placement(flags_with("auto", "", 0, 1), true, 1).describe() ==
          "1 GPU (cuda:0), one worker process each, bf16 (every visible GPU)");
}

TEST_CASE("placement: --job-timeout runs even one device as a worker process it can kill") {
  GenerationFlags f = flags_with("auto");
  f.job_time_limit = std::chrono::seconds(60);
  require_devices(plan_placement(f, true, 1), {Device::cuda(0)}, true);
  f.device = "cpu";
  require_devices(plan_placement(f, true, 1), {Device::cpu()}, true);
  f.job_time_limit.reset();
  require_devices(plan_placement(f, true, 1), {Device::cpu()}, false);
}

TEST_CASE("placement: impossible requests name the flag") {
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(plan_placement(flags_with("gpu"), true, 1),
                      Contains("--device must be auto, cpu, cuda"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("cuda"), true, 0),
                      Contains("--device cuda: no GPU is visible"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("cuda"), false, 0),
                      Contains("--device cuda: this ltx2 was built without the CUDA backend"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("auto", "0"), false, 1),
                      Contains("--gpus: this ltx2 was built"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("auto", "2"), true, 2),
                      Contains("--gpus: GPU 2 is not visible"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("cuda:3"), true, 2),
                      Contains("--device: GPU 3 is not visible"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("cpu", "0"), true, 1),
                      Contains("--device cpu and --gpus cannot be combined"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("auto", "0", 2), true, 1),
                      Contains("--ranks (CPU workers) and --gpus cannot be combined"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("cuda", "", 2), true, 1),
                      Contains("--ranks runs CPU workers"));
  REQUIRE_THROWS_WITH(plan_placement(flags_with("auto", "0,0"), true, 2), Contains("GPU 0 is listed twice"));
}

TEST_CASE("placement: a job across nodes names the nodes and each node's devices") {
  EnginePlacement ranks = plan_placement(flags_with("auto", "", 2), false, 0);
  ranks.nodes = 3;  // what plan_placement(flags) sets from runtime::node_count() under mpirun
  REQUIRE(ranks.describe() == "3 nodes (MPI), each: 2 CPU worker processes, float32 (--ranks)");
  EnginePlacement gpus = plan_placement(flags_with("auto"), true, 2);
  gpus.nodes = 2;
  REQUIRE(gpus.describe() == "2 nodes (MPI), each: 2 GPUs (cuda:0,1), one worker process each, bf16 (every "
                             "visible GPU)");
  // One machine, no MPI launch: the plan is the single-machine one.
  REQUIRE(plan_placement(flags_with("cpu")).nodes == 1);
  REQUIRE_FALSE(plan_placement(flags_with("cpu")).fleet);
}
