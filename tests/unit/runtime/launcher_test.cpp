// Device planning (--gpus / --ranks / CUDA_VISIBLE_DEVICES) and worker process start/stop.
#include "runtime/launcher.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <optional>

#include "support/catch.h"

namespace {

using namespace ltx2;
using namespace ltx2::runtime;

// Sets CUDA_VISIBLE_DEVICES for one scope, restoring what was there.
class VisibleDevices {
 public:
  explicit VisibleDevices(const char* value) {
    if (const char* old = std::getenv("CUDA_VISIBLE_DEVICES")) old_ = old;
    setenv("CUDA_VISIBLE_DEVICES", value, 1);
  }
  ~VisibleDevices() {
    if (old_)
      setenv("CUDA_VISIBLE_DEVICES", old_->c_str(), 1);
    else
      unsetenv("CUDA_VISIBLE_DEVICES");
  }

 private:
  std::optional<std::string> old_;
};

TEST_CASE("launcher: --gpus lists are parsed strictly") {
  REQUIRE(parse_gpu_list("0,2") == std::vector<int>{0, 2});
  REQUIRE(parse_gpu_list("3") == std::vector<int>{3});
  REQUIRE_THROWS_WITH(parse_gpu_list(""), Catch::Matchers::Contains("empty"));
  REQUIRE_THROWS_WITH(parse_gpu_list("a"), Catch::Matchers::Contains("'a' is not a GPU index"));
  REQUIRE_THROWS_WITH(parse_gpu_list("-1"), Catch::Matchers::Contains("not a GPU index"));
  REQUIRE_THROWS_WITH(parse_gpu_list("1,,2"), Catch::Matchers::Contains("not a GPU index"));
  REQUIRE_THROWS_WITH(parse_gpu_list("0,1,0"), Catch::Matchers::Contains("GPU 0 is listed twice"));
}

TEST_CASE("launcher: visible GPUs follow CUDA_VISIBLE_DEVICES without touching CUDA") {
  {
    VisibleDevices v("3,1,7");
    REQUIRE(visible_gpu_count() == 3);
    REQUIRE(plan_devices({}, 0) == std::vector<Device>{Device::cuda(0), Device::cuda(1), Device::cuda(2)});
    REQUIRE(plan_devices({0, 2}, 0) == std::vector<Device>{Device::cuda(0), Device::cuda(2)});
    REQUIRE_THROWS_WITH(plan_devices({3}, 0), Catch::Matchers::Contains("GPU 3 is not visible (3 visible)"));
  }
  {
    VisibleDevices v("0,-1,2");  // CUDA stops at the first invalid entry
    REQUIRE(visible_gpu_count() == 1);
  }
  {
    VisibleDevices v("GPU-5ee3c3a4-aaaa,GPU-77aa2e1b-bbbb");
    REQUIRE(visible_gpu_count() == 2);
  }
  {
    VisibleDevices v("");
    REQUIRE(visible_gpu_count() == 0);
    REQUIRE_THROWS_WITH(plan_devices({}, 0), Catch::Matchers::Contains("use --ranks N"));
    REQUIRE(plan_devices({}, 3) == std::vector<Device>(3, Device::cpu()));
  }
  REQUIRE_THROWS_WITH(plan_devices({0}, 2), Catch::Matchers::Contains("cannot be combined"));
  REQUIRE_THROWS_WITH(plan_devices({}, -1), Catch::Matchers::Contains("must not be negative"));
}

TEST_CASE("launcher: workers are spawned, killed and reaped") {
  pid_t ok = spawn_worker("/bin/sh", {"-c", "exit 4"});
  int status = 0;
  REQUIRE(waitpid(ok, &status, 0) == ok);
  REQUIRE(describe_wait_status(status) == "exited with code 4");

  pid_t missing = spawn_worker("/nonexistent/worker", {});
  REQUIRE(waitpid(missing, &status, 0) == missing);
  REQUIRE(describe_wait_status(status) == "exited with code 127");

  std::vector<pid_t> sleepers{spawn_worker("/bin/sleep", {"100"}), spawn_worker("/bin/sleep", {"100"})};
  const std::vector<pid_t> original = sleepers;
  kill_and_reap(sleepers);
  REQUIRE(sleepers == std::vector<pid_t>{-1, -1});
  for (pid_t p : original) REQUIRE(waitpid(p, &status, WNOHANG) == -1);  // reaped: no zombie left
  REQUIRE_THAT(describe_wait_status(9), Catch::Matchers::Contains("killed by signal 9"));
}

}  // namespace
