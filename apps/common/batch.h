// A --jobs file run as a batch over many processes or machines (a Slurm job array, or any loop of
// processes): the shard of the lines a process runs (--shard K/N, or the Slurm array task it is),
// lines whose outputs exist left alone (--skip-existing, so a rerun after a lost node redoes only
// what is missing: outputs are renamed into place only when complete), and the results manifest
// (--manifest FILE).
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/jobs_file.h"
#include "media/output_file.h"

namespace ltx2::cli {

// Shard `index` of `count` runs the job lines whose ordinal (0-based, in file order, blank lines
// not counted) is index modulo count: round robin, so neighbouring lines of similar size spread.
struct Shard {
  int index = 0, count = 1;
};
// "K/N", 0 <= K < N <= 100000; throws ltx2::Error naming --shard.
Shard parse_shard(const std::string& text);
// The shard a Slurm array task is (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _STEP: task ids MIN,
// MIN + STEP, ... are shards 0, 1, ...); none outside an array job. Throws ltx2::Error naming the
// variable when one is malformed.
std::optional<Shard> slurm_array_shard(const std::function<const char*(const char*)>& env = std::getenv);
// The jobs of `shard`.
std::vector<JobLine> select_shard(std::vector<JobLine> jobs, Shard shard);

// Marks each runnable line whose every output (media::clip_outputs) exists as skipped.
void skip_existing_outputs(std::vector<JobLine>& jobs);

// The results manifest: one JSON object per line of the shard, {"line", "status", "seconds",
// "output_path", "error"}, status one of pending, done, failed, invalid, skipped. The whole file
// is rewritten after every change, through a temporary renamed into place (fsync'd), so a reader
// (or a node that died mid-write) only ever sees a complete one; the path is locked while the batch
// runs, so two processes cannot share one manifest.
class BatchManifest {
 public:
  enum class Status { Pending, Done, Failed, Invalid, Skipped };
  // `path` empty: nothing is written. Every line starts pending, invalid (its error) or skipped.
  BatchManifest(std::string path, const std::vector<JobLine>& jobs);
  void set(int line, Status status, double seconds = 0, const std::string& error = "");

 private:
  struct Entry {
    int line = 0;
    Status status = Status::Pending;
    double seconds = 0;
    std::string output_path, error;
  };
  void write() const;

  std::string path_;
  std::optional<media::OutputLock> lock_;
  std::vector<Entry> entries_;
};

}  // namespace ltx2::cli
