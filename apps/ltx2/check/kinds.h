// The kinds of golden case `ltx2 check` knows, how a case folder is recognised as one of them,
// and the function that runs our implementation on it. A kind with no runner yet is reported as
// not implemented (and fails).
#pragma once

#include <string>
#include <vector>

#include "check/compare.h"
#include "check/golden_case.h"

namespace ltx2::check {

using KindRunner = void (*)(const GoldenCase& c, Report& report);

struct Kind {
  const char* name;
  // case.json field and a substring of its value that identify the kind.
  const char* field;
  const char* marker;
  KindRunner run;  // nullptr: not implemented yet
};

const std::vector<Kind>& kinds();
// The kind of a case, or nullptr when case.json matches none.
const Kind* classify(const GoldenCase& c);

}  // namespace ltx2::check
