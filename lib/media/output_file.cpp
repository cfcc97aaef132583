#include "media/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace ltx2::media {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

}  // namespace

std::string temporary_path(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void rename_into_place(const std::string& tmp, const std::string& path) {
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  LTX2_CHECK(fd >= 0, "{}: cannot open {} to flush it: {}", path, tmp, std::strerror(errno));
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  LTX2_CHECK(err == 0, "{}: cannot flush {} to disk: {}", path, tmp, std::strerror(err));
  LTX2_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "{}: cannot rename {} into place: {}", path, tmp,
             std::strerror(errno));
  const int dir = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace ltx2::media
