// Fleet test helpers (see fleet_support.h).
#include "fleet_support.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/launcher.h"
#include "support/catch.h"

namespace ltx2::test {

std::string fleet_shm_prefix() {
  return "ltx2t-" + std::to_string(getpid());
}

runtime::FleetOptions fleet_options(int ranks, const nlohmann::json& setup) {
  runtime::FleetOptions o;
  o.devices = runtime::plan_devices({}, ranks);
  o.runner = "test.faulty";
  o.setup_config = setup;
  o.shm_prefix = fleet_shm_prefix();
  o.sizes.setup_capacity = 64 << 10;
  o.sizes.job_slots = 3;
  o.sizes.job_capacity = 256 << 10;
  o.sizes.ring_capacity = 1 << 20;
  o.sizes.comm_slot_capacity = 64 << 10;
  o.ready_timeout = std::chrono::seconds(5);
  o.heartbeat_interval = std::chrono::milliseconds(50);
  o.heartbeat_timeout = std::chrono::seconds(3);
  o.collective_timeout = std::chrono::milliseconds(300);
  o.graceful_timeout = std::chrono::seconds(2);
  return o;
}

JobOutcome finish_job(runtime::Controller& c, std::chrono::milliseconds limit) {
  JobOutcome out;
  const auto begin = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::steady_clock::now() - begin; };
  try {
    while (elapsed() < limit) {
      auto ev = c.next(std::chrono::milliseconds(100));
      if (!ev) continue;
      if (ev->kind == runtime::JobEvent::Kind::Done) {
        out.done = std::move(ev);
        break;
      }
      if (ev->kind == runtime::JobEvent::Kind::Retry) ++out.retries;
      for (auto& t : ev->tensors) t.tensor = t.tensor.clone();  // kept: copied out of the result ring
      out.events.push_back(std::move(*ev));
    }
  } catch (const runtime::JobFailed& e) {
    out.failed = true;
    out.asymmetric = e.asymmetric();
    out.error = e.what();
  } catch (const runtime::FleetBroken& e) {
    out.broken = true;
    out.error = e.what();
  }
  out.seconds = std::chrono::duration<double>(elapsed()).count();
  INFO("job outcome: " << out.error);
  REQUIRE(out.seconds < std::chrono::duration<double>(limit).count());
  return out;
}

std::pair<void*, size_t> live_fleet_region() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::pair<void*, size_t>> found;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:" + fleet_shm_prefix() + "-") == std::string::npos) continue;
    const uint64_t begin = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    const uint64_t end = std::stoull(line.substr(line.find('-') + 1, line.find(' ')), nullptr, 16);
    found.emplace_back(reinterpret_cast<void*>(begin), static_cast<size_t>(end - begin));
  }
  REQUIRE(found.size() == 1);
  return found[0];
}

std::vector<std::string> leftover_shm(const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

std::vector<int> child_pids() {
  std::vector<int> out;
  const std::string me = std::to_string(getpid());
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid == me) out.push_back(std::stoi(pid));
  }
  return out;
}

void require_clean() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < deadline && !(leftover_shm().empty() && child_pids().empty()))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto shm = leftover_shm();
  const auto kids = child_pids();
  INFO("left in /dev/shm: " << shm.size() << ", child processes: " << kids.size());
  REQUIRE(shm.empty());
  REQUIRE(kids.empty());
}

}  // namespace ltx2::test
