// Stop-request flag set from SIGINT/SIGTERM handlers (see stop_signal.h).
#include "runtime/stop_signal.h"

#include <signal.h>

#include <atomic>

namespace ltx2::runtime {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void on_signal(int sig) {
  if (g_signal.exchange(sig) != 0) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() {
  return g_signal.load() != 0;
}
int stop_signal_number() {
  return g_signal.load();
}

}  // namespace ltx2::runtime
