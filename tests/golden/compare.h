// Comparison of an implementation's tensor with a fixture's, under the fixtures' rule
// |impl - ref| <= atol + rtol * |ref| elementwise (and a minimum cosine similarity where a case
// states one), and the report that golden_check prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ltx2::golden {

struct Tolerance {
  double atol = 0, rtol = 0;
  double min_cosine = -2;  // <= -1: not checked
  bool exact() const { return atol == 0 && rtol == 0; }
};

// Reads {"atol": a, "rtol": r, "min_cosine": c}, a bare number (atol) or "exact".
Tolerance parse_tolerance(const nlohmann::json& j);

struct CompareRow {
  std::string name;
  double max_abs = 0, max_rel = 0, cosine = 1;
  Tolerance tol;
  bool pass = false;
  std::string note;  // shape mismatch, NaN, ...
};

CompareRow compare(const std::string& name, const Tensor& got, const Tensor& expected, const Tolerance& tol);

class Report {
 public:
  void add(CompareRow row) { rows_.push_back(std::move(row)); }
  // Compares and adds; returns the row's pass flag.
  bool check(const std::string& name, const Tensor& got, const Tensor& expected, const Tolerance& tol);
  // A failed row with a message (e.g. a missing tensor).
  void fail(const std::string& name, const std::string& note);
  const std::vector<CompareRow>& rows() const { return rows_; }
  bool passed() const;

 private:
  std::vector<CompareRow> rows_;
};

}  // namespace ltx2::golden
