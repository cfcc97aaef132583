// How clip files reach their paths safely: every writer writes "<file>.tmp.<pid>" and renames it into
// place when complete (clip_writer.h); this file owns that naming, the rename, and a lock per
// output path.
//
// - rename_into_place flushes the temporary to disk (fsync) before the rename and the folder after
//   it, so that after a power loss the path holds the old file or the whole new one, never an
//   empty or partial file (a rename can reach the disk before the data it points at).
// - OutputLock is an advisory lock (flock) on "<path>.lock", taken without waiting and held while a
//   program writes the path: a second program writing the same path fails at once, naming it,
//   instead of both renaming onto it. The holder removes the lock file when done; one left by a
//   killed holder holds no lock (the kernel drops it) and is reused.
// - Taking the lock removes the "<file>.tmp.<pid>" of the path's files whose process has died (a
//   SIGKILL or a crash leaves them), a temporary folder with all it holds (a PNG sequence's); a
//   live process's temporary is never touched.
#pragma once

#include <string>
#include <vector>

namespace ltx2::media {

// "<path>.tmp.<this process's id>".
std::string temporary_path(const std::string& path);

// fsync(file). Throws ltx2::Error naming `name` (the output the user asked for).
void flush_to_disk(const std::string& file, const std::string& name);
// fsync of a folder, so that the names made or renamed in it last (best effort: some file
// systems refuse it).
void flush_folder(const std::string& folder);

// flush_to_disk(tmp), rename(tmp, path), flush_folder of its folder. Throws ltx2::Error naming the
// path.
void rename_into_place(const std::string& tmp, const std::string& path);

class OutputLock {
 public:
  // Locks `path`, then removes the stale temporaries of `files` (the path itself and any other
  // name its writer uses for a while). Throws ltx2::Error naming the path when another
  // program holds the lock (or the lock file cannot be made: its folder is not writable).
  OutputLock(const std::string& path, const std::vector<std::string>& files);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string lock_path_;
  int fd_ = -1;
};

}  // namespace ltx2::media
