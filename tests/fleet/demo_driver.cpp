// The demo driver (see demo_driver.h).
#include "demo_driver.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fleet_support.h"
#include "runtime/stop_signal.h"

namespace ltx2::test {

int run_demo_driver(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: test_fleet --demo-driver OUTPUT [RANKS]\n");
    return 2;
  }
  runtime::install_stop_signal_handlers();
  const std::string output = argv[2], partial = output + ".partial";
  const int ranks = argc > 3 ? std::atoi(argv[3]) : 2;
  try {
    runtime::Controller c(fleet_options(ranks));
    c.start();
    c.submit({{"tiles", 100000}, {"tile_delay_ms", 5}});
    std::ofstream out(partial, std::ios::binary);
    bool announced = false;
    for (;;) {
      auto ev = c.next(std::chrono::milliseconds(100));
      if (!ev) continue;
      if (ev->kind == runtime::JobEvent::Kind::Done) break;
      if (ev->kind != runtime::JobEvent::Kind::Output || ev->name != "tile") continue;
      const Tensor& t = ev->tensors.at(0).tensor;
      out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
      if (!announced) {
        out.flush();
        std::printf("streaming\n");
        std::fflush(stdout);
        announced = true;
      }
    }
    out.close();
    c.shutdown();
    std::filesystem::rename(partial, output);
    return 0;
  } catch (const runtime::Interrupted& e) {
    std::filesystem::remove(partial);
    std::fprintf(stderr, "demo driver: %s\n", e.what());
    return 130;
  } catch (const std::exception& e) {
    std::filesystem::remove(partial);
    std::fprintf(stderr, "demo driver: %s\n", e.what());
    return 1;
  }
}

}  // namespace ltx2::test
