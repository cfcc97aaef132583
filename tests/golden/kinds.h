// The kinds of golden case golden_check knows, how a case folder is recognised as one of them,
// and the function that runs our implementation on it. A kind with no runner yet is reported as
// not implemented (and fails).
#pragma once

#include <string>
#include <vector>

#include "golden/compare.h"
#include "golden/golden_case.h"

namespace ltx2::golden {

using KindRunner = void (*)(const GoldenCase& c, Report& report);

struct Kind {
  const char* name;
  // case.json field (a dotted path into nested objects) and a substring of its value that identify
  // the kind.
  const char* field;
  const char* marker;
  KindRunner run;  // nullptr: no runner registered for this kind
};

// The table of kinds, each with the runner registered for it (if any).
const std::vector<Kind>& kinds();

// Each check/kind_<name>.cpp registers its runner with
//   static const bool registered = register_kind_runner("transformer", &run_transformer);
// (these files are compiled into the ltx2 executable itself, so the initialisers always run).
bool register_kind_runner(const char* kind, KindRunner run);
// The kind of a case, or nullptr when case.json matches none.
const Kind* classify(const GoldenCase& c);

}  // namespace ltx2::golden
