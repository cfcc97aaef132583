// See wav_writer.h. Layout: RIFF header, "fmt " (PCM, 2 channels, 16 bits), "data"; the two sizes
// are patched by close() once the sample count is known.
#include "media/wav_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "media/output_file.h"

namespace ltx2::media {
namespace {

constexpr int kHeaderBytes = 44;

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

std::vector<uint8_t> header(int sample_rate, int64_t samples) {
  std::vector<uint8_t> h(kHeaderBytes);
  const auto data_bytes = static_cast<uint32_t>(samples * 4);
  std::memcpy(h.data(), "RIFF", 4);
  put_u32(h.data() + 4, 36 + data_bytes);
  std::memcpy(h.data() + 8, "WAVEfmt ", 8);
  put_u32(h.data() + 16, 16);
  put_u16(h.data() + 20, 1);  // PCM
  put_u16(h.data() + 22, 2);  // channels
  put_u32(h.data() + 24, static_cast<uint32_t>(sample_rate));
  put_u32(h.data() + 28, static_cast<uint32_t>(sample_rate) * 4);
  put_u16(h.data() + 32, 4);   // block align
  put_u16(h.data() + 34, 16);  // bits
  std::memcpy(h.data() + 36, "data", 4);
  put_u32(h.data() + 40, data_bytes);
  return h;
}

}  // namespace

WavStream::WavStream(std::string file, std::string name, int sample_rate)
    : file_(std::move(file)), name_(std::move(name)), sample_rate_(sample_rate) {
  LTX2_CHECK(sample_rate > 0, "{}: audio sample rate {} is not positive", name_, sample_rate);
  f_ = std::fopen(file_.c_str(), "wb");
  LTX2_CHECK(f_ != nullptr, "{}: cannot create {}: {}", name_, file_, std::strerror(errno));
  const auto h = header(sample_rate_, 0);
  put(h.data(), h.size());
}

WavStream::~WavStream() {
  if (f_) std::fclose(f_);
}

void WavStream::put(const void* data, size_t bytes) {
  LTX2_CHECK(std::fwrite(data, 1, bytes, f_) == bytes, "{}: write failed: {}", name_, std::strerror(errno));
}

void WavStream::write(const Tensor& audio) {
  LTX2_CHECK(f_ != nullptr, "{}: audio after the file was closed", name_);
  LTX2_CHECK(audio.dim() == 2 && audio.size(0) == 2, "{}: audio {} is not [2, N]", name_, audio.str());
  const Tensor wave = audio.to(Device::cpu()).to(DType::F32).contiguous();
  const int64_t n = wave.size(1);
  // The data size field is 32 bits: 4 bytes a stereo sample.
  LTX2_CHECK(samples_ + n < (int64_t{1} << 30), "{}: too much audio for a WAV file", name_);
  std::vector<uint8_t> pcm(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 2; ++c) {
      const float v = std::clamp(wave.data<float>()[c * n + i], -1.f, 1.f) * 32767.f;
      put_u16(pcm.data() + 4 * i + 2 * c, static_cast<uint16_t>(static_cast<int16_t>(v)));
    }
  put(pcm.data(), pcm.size());
  samples_ += n;
}

void WavStream::close() {
  LTX2_CHECK(f_ != nullptr, "{}: closed twice", name_);
  const auto h = header(sample_rate_, samples_);
  LTX2_CHECK(std::fseek(f_, 0, SEEK_SET) == 0, "{}: seek failed", name_);
  put(h.data(), h.size());
  std::FILE* f = f_;
  f_ = nullptr;
  LTX2_CHECK(std::fclose(f) == 0, "{}: close failed: {}", name_, std::strerror(errno));
}

WavWriter::WavWriter(std::string path, int sample_rate)
    : path_(std::move(path)), tmp_(temporary_path(path_)), stream_(tmp_, path_, sample_rate) {}

WavWriter::~WavWriter() {
  if (!finished_) std::remove(tmp_.c_str());
}

void WavWriter::write_video(const Tensor& frames) {
  LTX2_FAIL("{}: a .wav file holds audio only, got frames {}", path_, frames.str());
}

void WavWriter::write_audio(const Tensor& audio) {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  stream_.write(audio);
}

void WavWriter::finish() {
  LTX2_CHECK(!finished_, "{}: already finished", path_);
  stream_.close();
  rename_into_place(tmp_, path_);
  finished_ = true;
}

}  // namespace ltx2::media
