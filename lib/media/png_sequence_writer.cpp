// See png_sequence_writer.h.
#include "media/png_sequence_writer.h"

#include <png.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "media/output_file.h"

namespace ltx2::media {

namespace fs = std::filesystem;

namespace {

// Writes one 8-bit RGB PNG (libpng's simplified API), flushes it to disk and closes it; returns
// what went wrong, empty if nothing did.
std::string write_png_file(const std::string& file, const uint8_t* rgb, int width, int height) {
  FILE* f = std::fopen(file.c_str(), "wb");
  if (!f) return fmt::format("cannot create {}: {}", file, std::strerror(errno));
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  const bool encoded = png_image_write_to_stdio(&image, f, 0, rgb, 0, nullptr) != 0;
  const bool flushed = encoded && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!encoded) return fmt::format("cannot write {}: {}", file, image.message);
  if (!flushed || !closed) return fmt::format("cannot write {}: {}", file, std::strerror(err));
  return {};
}

}  // namespace

std::string FramePattern::file_name(int64_t frame) const {
  return prefix + fmt::format("{:0{}d}", frame, digits) + suffix;
}

bool FramePattern::matches(const std::string& name) const {
  if (name.size() < prefix.size() + suffix.size() + static_cast<size_t>(std::max(digits, 1))) return false;
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return false;
  const std::string number = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return number.find_first_not_of("0123456789") == std::string::npos;
}

bool is_frame_pattern(const std::string& path) {
  return fs::path(path).filename().string().find('%') != std::string::npos;
}

FramePattern parse_frame_pattern(const std::string& path) {
  const fs::path normal = fs::path(path).lexically_normal();
  const std::string name = normal.filename().string(), folder = normal.parent_path().string();
  const char* form = "a PNG sequence is FOLDER/NAME%05d.png (%d or %0Nd with N from 1 to 9, numbered from 0)";
  LTX2_CHECK(folder.find('%') == std::string::npos, "'%' may only be in the file name ({})", form);
  const size_t at = name.find('%');
  LTX2_CHECK(at != std::string::npos, "no frame number in the file name ({})", form);
  FramePattern p;
  size_t i = at + 1;
  if (i < name.size() && name[i] == '0') {
    ++i;
    LTX2_CHECK(i < name.size() && name[i] >= '1' && name[i] <= '9', "bad frame number ({})", form);
    p.digits = name[i++] - '0';
  }
  LTX2_CHECK(i < name.size() && name[i] == 'd', "bad frame number ({})", form);
  p.prefix = name.substr(0, at);
  p.suffix = name.substr(i + 1);
  LTX2_CHECK(p.suffix.find('%') == std::string::npos, "more than one '%' in the file name ({})", form);
  LTX2_CHECK(p.suffix.ends_with(".png"), "a frame pattern must end in .png ({})", form);
  const std::string last = fs::path(folder).filename().string();
  LTX2_CHECK(!folder.empty() && !last.empty() && last != "." && last != "..",
             "a PNG sequence needs a folder of its own, which it replaces whole ({})", form);
  p.folder = folder;
  return p;
}

void check_sequence_folder(const FramePattern& pattern) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(pattern.folder, ec);
  if (!fs::exists(st)) return;
  LTX2_CHECK(fs::is_directory(st), "{} is there and is not a folder", pattern.folder);
  for (fs::directory_iterator it(pattern.folder, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool ours =
        (name == kSequenceAudioName || pattern.matches(name)) && fs::is_regular_file(it->symlink_status());
    LTX2_CHECK(ours,
               "folder {} holds {}, which this pattern does not write; a sequence replaces its folder "
               "whole, so give a new or empty folder",
               pattern.folder, name);
  }
  LTX2_CHECK(!ec, "cannot list folder {}: {}", pattern.folder, ec.message());
}

std::string previous_sequence_name(const std::string& folder) {
  return folder + ".old";
}

PngSequenceWriter::PngSequenceWriter(std::string path, const PngSequenceOptions& options)
    : path_(std::move(path)), options_(options) {
  try {
    pattern_ = parse_frame_pattern(path_);
  } catch (const Error& e) {
    LTX2_FAIL("{}: {}", path_, e.what());
  }
  LTX2_CHECK(options.width > 0 && options.height > 0, "{}: frame size {}x{} is empty", path_, options.width,
             options.height);
  tmp_ = temporary_path(pattern_.folder);
  // Only a process with our id, which is gone, can have left this name.
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  LTX2_CHECK(fs::create_directory(tmp_, ec), "{}: cannot create the folder {}: {}", path_, tmp_,
             ec ? ec.message() : "it exists");
  if (options.audio_sample_rate > 0)
    audio_ = std::make_unique<WavStream>(tmp_ + "/" + kSequenceAudioName, path_, options.audio_sample_rate);
}

PngSequenceWriter::~PngSequenceWriter() {
  audio_.reset();
  if (!finished_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void PngSequenceWriter::write_video(const Tensor& frames) {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  LTX2_CHECK(frames.dim() == 4 && frames.size(1) == options_.height && frames.size(2) == options_.width &&
                 frames.size(3) == 3 && frames.dtype() == DType::U8 && frames.device().is_cpu(),
             "{}: frames {} are not uint8 [n, {}, {}, 3] on the CPU", path_, frames.str(), options_.height,
             options_.width);
  const Tensor rgb = frames.contiguous();
  const int64_t n = rgb.size(0), frame_bytes = int64_t{options_.width} * options_.height * 3;
  std::vector<std::string> errors(static_cast<size_t>(n));
  // Frames in parallel: zlib's deflate is what a PNG costs, one core a frame.
#pragma omp parallel for schedule(dynamic)
  for (int64_t f = 0; f < n; ++f)
    errors[static_cast<size_t>(f)] =
        write_png_file(tmp_ + "/" + pattern_.file_name(frames_ + f), rgb.data<uint8_t>() + f * frame_bytes,
                       options_.width, options_.height);
  for (const std::string& e : errors) LTX2_CHECK(e.empty(), "{}: {}", path_, e);
  frames_ += n;
}

void PngSequenceWriter::write_audio(const Tensor& audio) {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  LTX2_CHECK(audio_ != nullptr, "{}: audio for a sequence opened without an audio rate", path_);
  audio_->write(audio);
}

void PngSequenceWriter::finish() {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  LTX2_CHECK(frames_ > 0, "{}: no frames were written", path_);
  if (audio_) {
    audio_->close();
    flush_to_disk(tmp_ + "/" + kSequenceAudioName, path_);
  }
  flush_folder(tmp_);
  // Checked again here: the folder may have changed since the request was validated.
  try {
    check_sequence_folder(pattern_);
  } catch (const Error& e) {
    LTX2_FAIL("{}: {}", path_, e.what());
  }
  const std::string old = temporary_path(previous_sequence_name(pattern_.folder));
  const bool replacing = fs::exists(fs::symlink_status(pattern_.folder));
  if (replacing)
    LTX2_CHECK(std::rename(pattern_.folder.c_str(), old.c_str()) == 0,
               "{}: cannot move the earlier {} aside: {}", path_, pattern_.folder, std::strerror(errno));
  if (std::rename(tmp_.c_str(), pattern_.folder.c_str()) != 0) {
    const int err = errno;
    if (replacing) std::rename(old.c_str(), pattern_.folder.c_str());
    LTX2_FAIL("{}: cannot rename {} into place: {}", path_, tmp_, std::strerror(err));
  }
  finished_ = true;
  const fs::path parent = fs::path(pattern_.folder).parent_path();
  flush_folder(parent.empty() ? "." : parent.string());
  std::error_code ec;
  if (replacing) fs::remove_all(old, ec);
}

}  // namespace ltx2::media
