// `golden_check CASE_DIR...`: the golden-parity runner. Runs our implementation on the reference's
// fixture folders (tests/data/golden) and compares every output with the case's tolerances; ctest
// runs it once per case folder. A test program, not part of the product: users have the engine's
// own tests for this, and the stubs and rank simulations here exist only to replay the fixtures.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/log.h"
#include "golden/check_command.h"

int main(int argc, char** argv) {
  ltx2::init_logging();
  CLI::App app{"golden_check: compare the implementation with the reference's fixture folders"};
  ltx2::golden::CheckOptions opt;
  app.add_option("cases", opt.dirs, "case folders (case.json + io.safetensors)");
  app.add_flag("--json", opt.json, "Print JSON");
  app.add_flag("--skip-unimplemented", opt.skip_unimplemented,
               "Exit 77 instead of 1 when the only failures are kinds with no runner");
  app.add_flag("--list-kinds", opt.list_kinds, "List the known kinds and whether each is implemented");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "golden_check: error: %s (see --help)\n", e.what());
    return 2;
  }
  if (opt.dirs.empty() && !opt.list_kinds) {
    std::fprintf(stderr, "golden_check: give at least one case folder (or --list-kinds)\n");
    return 2;
  }
  return ltx2::golden::run_check(opt);
}
