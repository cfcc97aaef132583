// How clip files reach their paths safely: every writer writes "<file>.tmp.<pid>" and renames it into
// place when complete (clip_writer.h); this file owns that naming and the rename.
//
// - rename_into_place flushes the temporary to disk (fsync) before the rename and the folder after
//   it, so that after a power loss the path holds the old file or the whole new one, never an
//   empty or partial file (a rename can reach the disk before the data it points at).
#pragma once

#include <string>

namespace ltx2::media {

// "<path>.tmp.<this process's id>".
std::string temporary_path(const std::string& path);

// fsync(tmp), rename(tmp, path), fsync of the folder (best effort: some file systems refuse it).
// Throws ltx2::Error naming the path.
void rename_into_place(const std::string& tmp, const std::string& path);

}  // namespace ltx2::media
