// See y4m_wav_writer.h.
#include "media/y4m_wav_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "media/output_file.h"

namespace ltx2::media {
namespace {

uint8_t clamp_u8(float v) {
  return static_cast<uint8_t>(std::clamp(v, 0.f, 255.f));
}

// fps as num:den, exact for multiples of 1/1000 (24, 25, 23.976 → 23976:1000).
std::string frame_rate(double fps) {
  const int64_t num = std::llround(fps * 1000), g = std::gcd(num, int64_t{1000});
  return std::to_string(num / g) + ":" + std::to_string(1000 / g);
}

}  // namespace

std::string wav_path_for(const std::string& y4m_path) {
  return std::filesystem::path(y4m_path).replace_extension(".wav").string();
}

Y4mWavWriter::Y4mWavWriter(std::string path, const Y4mOptions& options)
    : path_(std::move(path)), wav_path_(wav_path_for(path_)), options_(options) {
  LTX2_CHECK(options.width > 0 && options.height > 0, "{}: frame size {}x{} is empty", path_, options.width,
             options.height);
  LTX2_CHECK(std::isfinite(options.fps) && options.fps >= 0.001 && options.fps <= 1000,
             "{}: frame rate {} is out of range", path_, options.fps);
  video_tmp_ = temporary_path(path_);
  video_ = std::fopen(video_tmp_.c_str(), "wb");
  LTX2_CHECK(video_ != nullptr, "{}: cannot create {}: {}", path_, video_tmp_, std::strerror(errno));
  const std::string header = "YUV4MPEG2 W" + std::to_string(options.width) + " H" +
                             std::to_string(options.height) + " F" + frame_rate(options.fps) +
                             " Ip A1:1 C444 XCOLORRANGE=LIMITED\n";
  write(header.data(), header.size());
  if (options.audio_sample_rate > 0) {
    audio_tmp_ = temporary_path(wav_path_);
    audio_ = std::make_unique<WavStream>(audio_tmp_, wav_path_, options.audio_sample_rate);
  }
}

Y4mWavWriter::~Y4mWavWriter() {
  if (video_) std::fclose(video_);
  audio_.reset();
  if (!finished_) {
    std::remove(video_tmp_.c_str());
    if (!audio_tmp_.empty()) std::remove(audio_tmp_.c_str());
  }
}

void Y4mWavWriter::write(const void* data, size_t bytes) {
  LTX2_CHECK(std::fwrite(data, 1, bytes, video_) == bytes, "{}: write failed: {}", path_,
             std::strerror(errno));
}

void Y4mWavWriter::write_video(const Tensor& frames) {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  LTX2_CHECK(frames.dim() == 4 && frames.size(1) == options_.height && frames.size(2) == options_.width &&
                 frames.size(3) == 3 && frames.dtype() == DType::U8 && frames.device().is_cpu(),
             "{}: frames {} are not uint8 [n, {}, {}, 3] on the CPU", path_, frames.str(), options_.height,
             options_.width);
  const Tensor rgb = frames.contiguous();
  const int64_t pixels = int64_t{options_.width} * options_.height;
  std::vector<uint8_t> planes(3 * pixels);
  for (int64_t f = 0; f < rgb.size(0); ++f) {
    const uint8_t* p = rgb.data<uint8_t>() + f * pixels * 3;
    // Rows in parallel: one pass over a frame of ~1.5 M pixels per core is what keeps the
    // uncompressed output from holding the decode back.
#pragma omp parallel for schedule(static) if (pixels > (int64_t{1} << 16))
    for (int64_t row = 0; row < options_.height; ++row)
      for (int64_t i = row * options_.width; i < (row + 1) * options_.width; ++i) {
        const float r = p[3 * i] / 255.f, g = p[3 * i + 1] / 255.f, b = p[3 * i + 2] / 255.f;
        const float y = 0.2126f * r + 0.7152f * g + 0.0722f * b;
        planes[i] = clamp_u8(y * 219.f + 16.f);
        planes[pixels + i] = clamp_u8((b - y) / 1.8556f * 224.f + 128.f);
        planes[2 * pixels + i] = clamp_u8((r - y) / 1.5748f * 224.f + 128.f);
      }
    write("FRAME\n", 6);
    write(planes.data(), planes.size());
  }
}

void Y4mWavWriter::write_audio(const Tensor& audio) {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  LTX2_CHECK(audio_ != nullptr, "{}: audio for a clip opened without an audio rate", wav_path_);
  audio_->write(audio);
}

void Y4mWavWriter::finish() {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  if (audio_) audio_->close();
  LTX2_CHECK(std::fclose(video_) == 0, "{}: close failed: {}", path_, std::strerror(errno));
  video_ = nullptr;
  // The audio first: a .y4m in place means its .wav is complete too.
  if (!audio_tmp_.empty()) rename_into_place(audio_tmp_, wav_path_);
  rename_into_place(video_tmp_, path_);
  finished_ = true;
}

}  // namespace ltx2::media
