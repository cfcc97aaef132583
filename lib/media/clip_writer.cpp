#include "media/clip_writer.h"

#include <filesystem>

#include "core/error.h"
#include "media/png_sequence_writer.h"
#include "media/y4m_wav_writer.h"

namespace ltx2::media {

ClipFormat clip_format(const std::string& path) {
  if (is_frame_pattern(path)) {
    parse_frame_pattern(path);
    return ClipFormat::PngSequence;
  }
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".mp4") return ClipFormat::Mp4;
  if (ext == ".y4m") return ClipFormat::Y4m;
  if (ext == ".wav") return ClipFormat::Wav;
  LTX2_FAIL(
      "must end in .mp4, .y4m (uncompressed video, the audio as a .wav beside it) or .wav (the audio "
      "only), or be a PNG sequence's frame pattern such as frames/%05d.png");
}

std::vector<std::string> clip_outputs(const std::string& path, bool with_audio) {
  switch (clip_format(path)) {
    case ClipFormat::Y4m:
      if (with_audio) return {path, wav_path_for(path)};
      return {path};
    case ClipFormat::PngSequence: return {parse_frame_pattern(path).folder};
    case ClipFormat::Mp4:
    case ClipFormat::Wav: break;
  }
  return {path};
}

}  // namespace ltx2::media
