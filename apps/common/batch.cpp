#include "common/batch.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/fields.h"
#include "media/clip_writer.h"

namespace ltx2::cli {

namespace {

constexpr int kMaxShards = 100000;

const char* status_name(BatchManifest::Status s) {
  switch (s) {
    case BatchManifest::Status::Pending: return "pending";
    case BatchManifest::Status::Done: return "done";
    case BatchManifest::Status::Failed: return "failed";
    case BatchManifest::Status::Invalid: return "invalid";
    case BatchManifest::Status::Skipped: return "skipped";
  }
  return "?";
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  LTX2_CHECK(slash != std::string::npos, "--shard must be K/N (shard K of N, 0 <= K < N), got '{}'", text);
  Shard s;
  s.index = static_cast<int>(fields::integer_from_text(text.substr(0, slash), "--shard K", 0, kMaxShards));
  s.count = static_cast<int>(fields::integer_from_text(text.substr(slash + 1), "--shard N", 1, kMaxShards));
  LTX2_CHECK(s.index < s.count, "--shard {}: K must be below N (shards 0 to {})", text, s.count - 1);
  return s;
}

std::optional<Shard> slurm_array_shard(const std::function<const char*(const char*)>& env) {
  const char* id = env("SLURM_ARRAY_TASK_ID");
  const char* count = env("SLURM_ARRAY_TASK_COUNT");
  if (id == nullptr || count == nullptr) return std::nullopt;
  const auto number = [&](const char* name, const char* fallback, int64_t min) {
    const char* v = env(name);
    return fields::integer_from_text(v != nullptr ? v : fallback, name, min, int64_t{1} << 31);
  };
  const int64_t task = number("SLURM_ARRAY_TASK_ID", "0", 0);
  const int64_t tasks = number("SLURM_ARRAY_TASK_COUNT", "1", 1);
  const int64_t first = number("SLURM_ARRAY_TASK_MIN", "0", 0);
  const int64_t step = number("SLURM_ARRAY_TASK_STEP", "1", 1);
  LTX2_CHECK(
      task >= first && (task - first) % step == 0 && (task - first) / step < tasks && tasks <= kMaxShards,
      "SLURM_ARRAY_TASK_ID {} is not one of the {} tasks {}, {} + {}, ...", task, tasks, first, first, step);
  return Shard{static_cast<int>((task - first) / step), static_cast<int>(tasks)};
}

std::vector<JobLine> select_shard(std::vector<JobLine> jobs, Shard shard) {
  std::vector<JobLine> mine;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (static_cast<int>(i % static_cast<size_t>(shard.count)) == shard.index)
      mine.push_back(std::move(jobs[i]));
  return mine;
}

void skip_existing_outputs(std::vector<JobLine>& jobs) {
  for (JobLine& job : jobs) {
    if (!job.error.empty()) continue;
    bool all = true;
    for (const std::string& out : media::clip_outputs(job.request.output_path, output_has_audio(job.request)))
      all = all && std::filesystem::exists(out);
    if (all) job.skipped = "its output exists (--skip-existing)";
  }
}

BatchManifest::BatchManifest(std::string path, const std::vector<JobLine>& jobs) : path_(std::move(path)) {
  for (const JobLine& job : jobs) {
    Entry e;
    e.line = job.line;
    e.output_path = job.request.output_path;
    if (!job.error.empty()) {
      e.status = Status::Invalid;
      e.error = job.error;
    } else if (!job.skipped.empty()) {
      e.status = Status::Skipped;
      e.error = job.skipped;
    }
    entries_.push_back(std::move(e));
  }
  if (path_.empty()) return;
  try {
    lock_.emplace(path_, std::vector<std::string>{path_});
  } catch (const Error& e) {
    LTX2_FAIL("--manifest {}", e.what());
  }
  write();
}

void BatchManifest::set(int line, Status status, double seconds, const std::string& error) {
  for (Entry& e : entries_)
    if (e.line == line) {
      e.status = status;
      e.seconds = seconds;
      e.error = error;
    }
  if (!path_.empty()) write();
}

void BatchManifest::write() const {
  const std::string tmp = media::temporary_path(path_);
  {
    std::ofstream out(tmp, std::ios::trunc);
    LTX2_CHECK(out, "--manifest {}: cannot write {}", path_, tmp);
    for (const Entry& e : entries_) {
      nlohmann::json j = {{"line", e.line},
                          {"status", status_name(e.status)},
                          {"seconds", std::round(e.seconds * 1000) / 1000},
                          {"output_path", e.output_path}};
      if (!e.error.empty()) j["error"] = e.error;
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    }
    LTX2_CHECK(out.flush(), "--manifest {}: cannot write {}", path_, tmp);
  }
  media::rename_into_place(tmp, path_);
}

}  // namespace ltx2::cli
