#include "golden/check_command.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "golden/kinds.h"

namespace ltx2::golden {

namespace {

struct CaseResult {
  std::string dir, kind;
  bool implemented = false, passed = false;
  std::string error;
  Report report;
};

CaseResult run_case(const std::string& dir) {
  CaseResult r;
  r.dir = dir;
  try {
    GoldenCase c(dir);
    const Kind* k = classify(c);
    LTX2_CHECK(k != nullptr, "{}: case.json matches no known kind", dir);
    r.kind = k->name;
    r.implemented = k->run != nullptr;
    if (!r.implemented) return r;
    k->run(c, r.report);
    r.passed = r.report.passed();
  } catch (const Error& e) {
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = std::string("unexpected error: ") + e.what();
  }
  return r;
}

void print_text(const CaseResult& r) {
  std::printf("%s  [%s]\n", r.dir.c_str(), r.kind.empty() ? "?" : r.kind.c_str());
  if (!r.error.empty()) {
    std::printf("  ERROR %s\n", r.error.c_str());
  } else if (!r.implemented) {
    std::printf("  NOT IMPLEMENTED: kind '%s' has no implementation yet\n", r.kind.c_str());
  }
  for (const auto& row : r.report.rows()) {
    std::printf("  %-4s %-44s max_abs %.3e  max_rel %.3e  (atol %.1e rtol %.1e)%s%s\n",
                row.pass ? "PASS" : "FAIL", row.name.c_str(), row.max_abs, row.max_rel, row.tol.atol,
                row.tol.rtol, row.note.empty() ? "" : "  ", row.note.c_str());
  }
  std::printf("  => %s\n",
              r.passed ? "PASS" : (r.implemented || !r.error.empty() ? "FAIL" : "NOT IMPLEMENTED"));
}

nlohmann::json to_json(const CaseResult& r) {
  nlohmann::json j = {
      {"case", r.dir}, {"kind", r.kind}, {"implemented", r.implemented}, {"passed", r.passed}};
  if (!r.error.empty()) j["error"] = r.error;
  j["outputs"] = nlohmann::json::array();
  for (const auto& row : r.report.rows()) {
    j["outputs"].push_back({{"name", row.name},
                            {"max_abs", row.max_abs},
                            {"max_rel", row.max_rel},
                            {"cosine", row.cosine},
                            {"atol", row.tol.atol},
                            {"rtol", row.tol.rtol},
                            {"pass", row.pass},
                            {"note", row.note}});
  }
  return j;
}

}  // namespace

int run_check(const CheckOptions& opt) {
  if (opt.list_kinds) {
    for (const Kind& k : kinds())
      std::printf("%-24s %s\n", k.name, k.run ? "implemented" : "not implemented");
    return 0;
  }
  std::vector<CaseResult> results;
  for (const auto& dir : opt.dirs) results.push_back(run_case(dir));
  bool all_pass = true, any_unimplemented = false;
  for (const auto& r : results) {
    if (r.error.empty() && !r.implemented) {
      any_unimplemented = true;
    } else if (!r.passed) {
      all_pass = false;
    }
  }
  if (opt.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : results) j.push_back(to_json(r));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const auto& r : results) print_text(r);
  }
  if (!all_pass) return 1;
  if (any_unimplemented) return opt.skip_unimplemented ? kExitUnimplemented : 1;
  return 0;
}

}  // namespace ltx2::golden
