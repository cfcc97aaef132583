// apps/common/batch: shards (from --shard and from a Slurm array's variables), --skip-existing and
// the results manifest.
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/batch.h"
#include "core/error.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::cli;
using Catch::Matchers::Contains;

namespace {

std::vector<JobLine> lines(int n) {
  std::vector<JobLine> jobs;
  for (int i = 0; i < n; ++i) {
    JobLine j;
    j.line = 2 * i + 1;  // blank lines between them: ordinals, not line numbers, decide the shard
    j.request.output_path = "out" + std::to_string(i) + ".mp4";
    jobs.push_back(j);
  }
  return jobs;
}

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) out.push_back(nlohmann::json::parse(text));
  return out;
}

}  // namespace

TEST_CASE("batch: --shard K/N, each refusal naming the flag") {
  const Shard s = parse_shard("2/5");
  CHECK((s.index == 2 && s.count == 5));
  CHECK(parse_shard("0/1").count == 1);
  CHECK_THROWS_WITH(parse_shard("3"), Contains("--shard must be K/N"));
  CHECK_THROWS_WITH(parse_shard("5/5"), Contains("--shard 5/5: K must be below N (shards 0 to 4)"));
  CHECK_THROWS_WITH(parse_shard("-1/4"), Contains("--shard K: '-1' is out of range"));
  CHECK_THROWS_WITH(parse_shard("1/0"), Contains("--shard N: '0' is out of range"));
  CHECK_THROWS_WITH(parse_shard("a/4"), Contains("--shard K: 'a' is not a whole number"));
}

TEST_CASE("batch: the shards of a file cover every line once, round robin") {
  const auto all = lines(7);
  std::map<int, int> seen;
  for (int k = 0; k < 3; ++k) {
    const auto mine = select_shard(all, {k, 3});
    CHECK(mine.size() == (k == 0 ? 3u : 2u));
    for (const JobLine& j : mine) {
      seen[j.line]++;
      CHECK(((j.line - 1) / 2) % 3 == k);
    }
  }
  CHECK(seen.size() == 7);
  for (const auto& [line, n] : seen) CHECK(n == 1);
  CHECK(select_shard(lines(2), {4, 5}).empty());  // more shards than lines: some have none
}

TEST_CASE("batch: a Slurm array task is its shard (ids MIN, MIN + STEP, ...)") {
  std::map<std::string, std::string> vars;
  const auto env = [&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  CHECK_FALSE(slurm_array_shard(env).has_value());  // not an array job
  vars = {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  Shard s = slurm_array_shard(env).value();
  CHECK((s.index == 3 && s.count == 4));
  vars = {{"SLURM_ARRAY_TASK_ID", "14"},
          {"SLURM_ARRAY_TASK_COUNT", "4"},
          {"SLURM_ARRAY_TASK_MIN", "10"},
          {"SLURM_ARRAY_TASK_STEP", "2"}};
  s = slurm_array_shard(env).value();
  CHECK((s.index == 2 && s.count == 4));
  vars["SLURM_ARRAY_TASK_ID"] = "13";
  CHECK_THROWS_WITH(slurm_array_shard(env), Contains("SLURM_ARRAY_TASK_ID 13 is not one of the 4 tasks"));
  vars["SLURM_ARRAY_TASK_ID"] = "x";
  CHECK_THROWS_WITH(slurm_array_shard(env), Contains("SLURM_ARRAY_TASK_ID: 'x' is not a whole number"));
}

TEST_CASE("batch: --skip-existing leaves out the lines whose every output exists") {
  test::ScratchDir dir("batch_skip");
  auto jobs = lines(3);
  for (JobLine& j : jobs) j.request.output_path = dir.file(j.request.output_path);
  jobs[2].request.output_path = dir.file("c.y4m");  // its audio is c.wav beside it
  test::write_bytes(jobs[0].request.output_path, "x");
  test::write_bytes(dir.file("c.y4m"), "x");
  jobs[1].error = "bad line";
  skip_existing_outputs(jobs);
  CHECK_THAT(jobs[0].skipped, Contains("its output exists"));
  CHECK(jobs[1].skipped.empty());  // an invalid line stays invalid
  CHECK(jobs[2].skipped.empty());  // c.wav is missing
  test::write_bytes(dir.file("c.wav"), "x");
  skip_existing_outputs(jobs);
  CHECK_FALSE(jobs[2].skipped.empty());
}

TEST_CASE("batch: the manifest holds every line, rewritten whole, locked while in use") {
  test::ScratchDir dir("batch_manifest");
  auto jobs = lines(3);
  jobs[1].error = "unknown field 'colour'";
  jobs[2].skipped = "its output exists (--skip-existing)";
  const std::string path = dir.file("m.jsonl");
  {
    BatchManifest m(path, jobs);
    auto rows = read_lines(path);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].at("status") == "pending");
    CHECK(rows[0].at("line") == 1);
    CHECK(rows[0].at("output_path") == "out0.mp4");
    CHECK(rows[1].at("status") == "invalid");
    CHECK(rows[1].at("error") == "unknown field 'colour'");
    CHECK(rows[2].at("status") == "skipped");
    // A second batch cannot keep its results in the same file.
    CHECK_THROWS_WITH(BatchManifest(path, jobs), Contains("--manifest " + path));
    m.set(1, BatchManifest::Status::Done, 12.3456);
    rows = read_lines(path);
    CHECK(rows[0].at("status") == "done");
    CHECK(rows[0].at("seconds") == 12.346);
    CHECK_FALSE(rows[0].contains("error"));
    m.set(1, BatchManifest::Status::Failed, 0, "fleet broken");
    CHECK(read_lines(path)[0].at("error") == "fleet broken");
  }
  // Nothing but the manifest is left: no temporary, no lock file.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
  CHECK(names == std::vector<std::string>{"m.jsonl"});
  BatchManifest none("", jobs);  // no path: nothing written
  none.set(1, BatchManifest::Status::Done, 1);
}
