// 16-bit PCM stereo WAV, as the reference's save-audio writes it (pcm_s16le at the vocoder's rate):
// each sample clipped to [-1, 1], scaled by 32767 and truncated, as for the MP4's AAC input.
// WavStream streams the samples into one file and patches the header's sizes when closed; the
// .y4m and PNG-sequence writers put one beside their frames. WavWriter is the audio-only clip
// (an --output-path ending in .wav): "<path>.tmp.<pid>", flushed to disk and renamed by finish()
// (media/output_file.h); destroyed before finish() it removes the temporary.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/tensor.h"
#include "media/clip_writer.h"

namespace ltx2::media {

class WavStream {
 public:
  // Creates `file` (errors name `name`, the path the user knows) and writes a header for no samples.
  WavStream(std::string file, std::string name, int sample_rate);
  // Closes the file if still open; removing an unfinished one is the owner's job.
  ~WavStream();
  WavStream(const WavStream&) = delete;
  WavStream& operator=(const WavStream&) = delete;

  // Appends audio [2, N] (any float dtype, any device) in [-1, 1].
  void write(const Tensor& audio);
  // Patches the sizes into the header and closes the file (flushing it to disk is the owner's:
  // rename_into_place or flush_to_disk).
  void close();
  int64_t samples() const { return samples_; }  // per channel

 private:
  std::string file_, name_;
  int sample_rate_;
  std::FILE* f_ = nullptr;
  int64_t samples_ = 0;
  void put(const void* data, size_t bytes);
};

class WavWriter final : public ClipWriter {
 public:
  WavWriter(std::string path, int sample_rate);
  ~WavWriter() override;
  WavWriter(const WavWriter&) = delete;
  WavWriter& operator=(const WavWriter&) = delete;

  // Refused: the file holds audio only.
  void write_video(const Tensor& frames) override;
  void write_audio(const Tensor& audio) override;
  void finish() override;

 private:
  std::string path_, tmp_;
  WavStream stream_;
  bool finished_ = false;
};

}  // namespace ltx2::media
