#include "golden/compare.h"

#include <cmath>

#include "core/error.h"

namespace ltx2::golden {

Tolerance parse_tolerance(const nlohmann::json& j) {
  Tolerance t;
  if (j.is_number()) {
    t.atol = j.get<double>();
  } else if (j.is_string()) {
    LTX2_CHECK(j.get<std::string>().rfind("exact", 0) == 0 || j.get<std::string>().rfind("bitwise", 0) == 0,
               "unrecognised tolerance '{}'", j.get<std::string>());
  } else if (j.is_object()) {
    t.atol = j.value("atol", 0.0);
    t.rtol = j.value("rtol", 0.0);
    if (j.contains("min_cosine")) t.min_cosine = j["min_cosine"].get<double>();
    if (j.contains("cosine_min")) t.min_cosine = j["cosine_min"].get<double>();
  } else {
    LTX2_FAIL("unrecognised tolerance {}", j.dump());
  }
  return t;
}

CompareRow compare(const std::string& name, const Tensor& got, const Tensor& expected, const Tolerance& tol) {
  CompareRow row;
  row.name = name;
  row.tol = tol;
  if (!got.defined()) {
    row.note = "not produced";
    return row;
  }
  if (got.shape() != expected.shape()) {
    row.note = "shape " + shape_str(got.shape()) + " != expected " + shape_str(expected.shape());
    return row;
  }
  std::vector<float> g = got.to_vector(), e = expected.to_vector();
  bool ok = true;
  double dot = 0, ng = 0, ne = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double a = g[i], b = e[i];
    if (std::isnan(a) != std::isnan(b)) {
      ok = false;
      row.note = "NaN mismatch at element " + std::to_string(i);
      continue;
    }
    if (std::isnan(a)) continue;
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) ok = false;
      continue;
    }
    double d = std::fabs(a - b);
    row.max_abs = std::max(row.max_abs, d);
    row.max_rel = std::max(row.max_rel, d / std::max(std::fabs(b), 1e-12));
    if (d > tol.atol + tol.rtol * std::fabs(b)) ok = false;
    dot += a * b;
    ng += a * a;
    ne += b * b;
  }
  row.cosine = (ng > 0 && ne > 0) ? dot / std::sqrt(ng * ne) : (ng == ne ? 1.0 : 0.0);
  if (tol.min_cosine > -1 && row.cosine < tol.min_cosine) {
    ok = false;
    row.note = "cosine below minimum";
  }
  row.pass = ok;
  return row;
}

bool Report::check(const std::string& name, const Tensor& got, const Tensor& expected, const Tolerance& tol) {
  rows_.push_back(compare(name, got, expected, tol));
  return rows_.back().pass;
}

void Report::fail(const std::string& name, const std::string& note) {
  CompareRow row;
  row.name = name;
  row.note = note;
  rows_.push_back(row);
}

bool Report::passed() const {
  if (rows_.empty()) return false;  // a case that compared nothing proves nothing
  for (const auto& r : rows_)
    if (!r.pass) return false;
  return true;
}

}  // namespace ltx2::golden
