// The golden-parity runner's core (tests/golden/main.cpp is its front end): runs our implementation
// on case folders and prints, per output, max abs error, max rel error and PASS/FAIL against the
// case's tolerances.
#pragma once

#include <string>
#include <vector>

namespace ltx2::golden {

// Exit status when every case that ran passed but some kind has no implementation, under
// --skip-unimplemented (ctest reports it as skipped, so the missing kinds stay visible).
constexpr int kExitUnimplemented = 77;

struct CheckOptions {
  std::vector<std::string> dirs;
  bool json = false;
  bool skip_unimplemented = false;
  bool list_kinds = false;
};

// Returns the process exit status: 0 all passed, 1 a failure (or an unimplemented kind),
// kExitUnimplemented as above.
int run_check(const CheckOptions& opt);

}  // namespace ltx2::golden
