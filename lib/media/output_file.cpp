#include "media/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"

namespace ltx2::media {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

// Removes "<file>.tmp.<pid>" beside `file` for every pid that names no process. A pid in use by
// another program (a reused one, or one of our own that is still writing) keeps its file. Never
// throws: a folder that cannot be listed only leaves the files there.
void remove_stale_temporaries(const std::string& file) {
  const std::string prefix = fs::path(file).filename().string() + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(folder_of(file), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code removed;
    if (fs::remove_all(entry.path(), removed) > 0)
      log_info("{}: removed {}, left by process {}, which is gone", file, entry.path().string(), pid);
  }
}

}  // namespace

std::string temporary_path(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void flush_to_disk(const std::string& file, const std::string& name) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  LTX2_CHECK(fd >= 0, "{}: cannot open {} to flush it: {}", name, file, std::strerror(errno));
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  LTX2_CHECK(err == 0, "{}: cannot flush {} to disk: {}", name, file, std::strerror(err));
}

void flush_folder(const std::string& folder) {
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void rename_into_place(const std::string& tmp, const std::string& path) {
  flush_to_disk(tmp, path);
  LTX2_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "{}: cannot rename {} into place: {}", path, tmp,
             std::strerror(errno));
  flush_folder(folder_of(path).string());
}

OutputLock::OutputLock(const std::string& path, const std::vector<std::string>& files)
    : lock_path_(path + ".lock") {
  for (;;) {
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    LTX2_CHECK(fd_ >= 0, "{}: cannot create the lock file {}: {}", path, lock_path_, std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_);
      LTX2_CHECK(err != EWOULDBLOCK, "{}: another program is writing this file (it holds {})", path,
                 lock_path_);
      LTX2_FAIL("{}: cannot lock {}: {}", path, lock_path_, std::strerror(err));
    }
    // The previous holder may have removed the file between our open and our flock: the lock is
    // then on a file no longer under that name, which a third program could create and lock anew.
    struct stat held {};
    struct stat named {};
    if (::fstat(fd_, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino)
      break;
    ::close(fd_);
  }
  for (const std::string& f : files) remove_stale_temporaries(f);
}

// Removed while still held, so that a program that opened it meanwhile sees the name gone and
// starts over (above) instead of locking a file that no longer has it.
OutputLock::~OutputLock() {
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

}  // namespace ltx2::media
