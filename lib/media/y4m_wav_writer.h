// Uncompressed clip output that needs no FFmpeg: the video as YUV4MPEG2 ("<path>", 4:4:4, 8-bit,
// from 8-bit RGB frames by the BT.709 limited-range formulas, Y * 219 + 16 and C * 224 + 128
// truncated, computed here per pixel (rows in parallel) so that a build without FFmpeg has it), the
// audio as 16-bit PCM WAV beside it ("<path without .y4m>.wav", media/wav_writer.h). Both files are written
// as "<file>.tmp.<pid>", flushed to disk and renamed by finish() (media/output_file.h); a writer destroyed
// before finish() removes them. Players and ffmpeg read both.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "media/clip_writer.h"
#include "media/wav_writer.h"

namespace ltx2::media {

struct Y4mOptions {
  int width = 0, height = 0;
  double fps = 24;            // written as an exact fraction when it is a multiple of 1/1000
  int audio_sample_rate = 0;  // 0: no WAV file
};

// The WAV file that goes with a .y4m path.
std::string wav_path_for(const std::string& y4m_path);

class Y4mWavWriter final : public ClipWriter {
 public:
  // Opens the temporary files and writes the Y4M header. Throws ltx2::Error naming the path.
  Y4mWavWriter(std::string path, const Y4mOptions& options);
  ~Y4mWavWriter() override;
  Y4mWavWriter(const Y4mWavWriter&) = delete;
  Y4mWavWriter& operator=(const Y4mWavWriter&) = delete;

  void write_video(const Tensor& frames) override;
  void write_audio(const Tensor& audio) override;
  void finish() override;

 private:
  std::string path_, wav_path_, video_tmp_, audio_tmp_;
  Y4mOptions options_;
  std::FILE* video_ = nullptr;
  std::unique_ptr<WavStream> audio_;
  bool finished_ = false;
  void write(const void* data, size_t bytes);
};

}  // namespace ltx2::media
