// A clip as a PNG image sequence: every frame an 8-bit RGB PNG (libpng's default compression)
// named by a frame-number pattern, numbered from 0 as --image counts frames, and the audio as
// "audio.wav" (media/wav_writer.h) beside them.
//
// The pattern is an output path whose file name holds one number conversion, "%d" or "%0Nd"
// (N digits, 1 to 9), and ends in .png: "frames/%05d.png" writes frames/00000.png,
// frames/00001.png, ... The folder holding them ("frames") is the output, so it must be a folder
// of its own (not "." or "/"), and it appears whole: the writer fills "<folder>.tmp.<pid>" (each
// file flushed to disk) and finish() renames it into place. A folder already there is replaced
// only when it holds nothing but files the same pattern writes (an earlier run's; an empty folder
// too), never a folder with anything else in it: that one is moved to
// "<folder>.old.tmp.<pid>", the new one renamed in, the old one removed. A writer destroyed
// before finish() removes its temporary folder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "media/clip_writer.h"
#include "media/wav_writer.h"

namespace ltx2::media {

// The audio file inside a sequence's folder.
inline constexpr const char* kSequenceAudioName = "audio.wav";

struct FramePattern {
  std::string folder;          // "frames" for "frames/%05d.png"
  std::string prefix, suffix;  // the file name around the number ("", ".png")
  int digits = 0;              // zero-padded width; 0 for %d (no padding)

  std::string file_name(int64_t frame) const;
  // Whether `name` is a frame's file name under this pattern (at least `digits` decimal digits).
  bool matches(const std::string& name) const;
};

// Whether `path` is meant as a frame pattern: its file name holds a '%'.
bool is_frame_pattern(const std::string& path);
// Throws ltx2::Error saying what is wrong (without the path: the caller names it and its flag)
// when `path` is not a pattern of the form above.
FramePattern parse_frame_pattern(const std::string& path);
// Throws ltx2::Error saying why (without the path) when the pattern's folder cannot be replaced:
// a file is there, or a folder holding anything but this pattern's frames and kSequenceAudioName.
void check_sequence_folder(const FramePattern& pattern);
// The name (as "<name>.tmp.<pid>") an earlier sequence's folder has while the new one takes its
// place; the output lock clears stale ones.
std::string previous_sequence_name(const std::string& folder);

struct PngSequenceOptions {
  int width = 0, height = 0;
  int audio_sample_rate = 0;  // 0: no audio file
};

class PngSequenceWriter final : public ClipWriter {
 public:
  // Creates the temporary folder. Throws ltx2::Error naming the path.
  PngSequenceWriter(std::string path, const PngSequenceOptions& options);
  ~PngSequenceWriter() override;
  PngSequenceWriter(const PngSequenceWriter&) = delete;
  PngSequenceWriter& operator=(const PngSequenceWriter&) = delete;

  // Frames [n, H, W, 3] uint8 RGB on the CPU, one PNG each (the frames of a chunk in parallel).
  void write_video(const Tensor& frames) override;
  void write_audio(const Tensor& audio) override;
  void finish() override;

 private:
  std::string path_;
  FramePattern pattern_;
  PngSequenceOptions options_;
  std::string tmp_;  // the folder being filled
  std::unique_ptr<WavStream> audio_;
  int64_t frames_ = 0;
  bool finished_ = false;
};

}  // namespace ltx2::media
