// SIGINT / SIGTERM for a driver: the handler only records the request; the controller's waits see
// it within a few milliseconds, kill and reap the fleet and throw Interrupted, so the app can remove
// partial output and exit. A second signal while the first is being handled ends the process at
// once (the default action), in case the driver itself is stuck.
#pragma once

namespace ltx2::runtime {

void install_stop_signal_handlers();
bool stop_requested();
// The signal that asked to stop (0 if none).
int stop_signal_number();

}  // namespace ltx2::runtime
