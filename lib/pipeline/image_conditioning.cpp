// Image preprocessing (resize, crop, range) and conditioning items from images.
#include "pipeline/image_conditioning.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "media/image_reader.h"
#if LTX2_WITH_MEDIA
#include "media/ffmpeg/h264_image.h"
#endif

namespace ltx2::pipeline {

namespace {

// Source sample position of output index i for a resize from n_in to n_out (PyTorch's bilinear
// with align_corners=False: scale in/out, half-pixel centres, clamped at 0).
struct Tap {
  int64_t i0, i1;
  float w1;
};

std::vector<Tap> bilinear_taps(int64_t n_in, int64_t n_out) {
  const float scale = static_cast<float>(n_in) / static_cast<float>(n_out);
  std::vector<Tap> taps(static_cast<size_t>(n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    const float src = std::max((static_cast<float>(o) + 0.5f) * scale - 0.5f, 0.0f);
    const int64_t i0 = std::min(static_cast<int64_t>(src), n_in - 1);
    taps[o] = {i0, std::min(i0 + 1, n_in - 1), src - static_cast<float>(i0)};
  }
  return taps;
}

}  // namespace

Tensor preprocess_image(const Tensor& image_hwc, int64_t height, int64_t width) {
  LTX2_CHECK(image_hwc.dim() == 3 && image_hwc.size(2) == 3, "image must be [H, W, 3], got {}",
             image_hwc.str());
  const Tensor img = image_hwc.to(DType::F32).contiguous();
  const int64_t h = img.size(0), w = img.size(1);
  const double scale = std::max(static_cast<double>(height) / static_cast<double>(h),
                                static_cast<double>(width) / static_cast<double>(w));
  const auto nh = static_cast<int64_t>(std::ceil(static_cast<double>(h) * scale));
  const auto nw = static_cast<int64_t>(std::ceil(static_cast<double>(w) * scale));
  const int64_t top = (nh - height) / 2, left = (nw - width) / 2;
  const std::vector<Tap> ty = bilinear_taps(h, nh), tx = bilinear_taps(w, nw);
  Tensor out = Tensor::empty({1, 3, 1, height, width});
  const float* src = img.data<float>();
  float* dst = out.data<float>();
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < height; ++y) {
      const Tap& a = ty[static_cast<size_t>(y + top)];
      for (int64_t x = 0; x < width; ++x) {
        const Tap& b = tx[static_cast<size_t>(x + left)];
        auto at = [&](int64_t yy, int64_t xx) { return src[(yy * w + xx) * 3 + c]; };
        const float top_row = at(a.i0, b.i0) * (1 - b.w1) + at(a.i0, b.i1) * b.w1;
        const float bottom_row = at(a.i1, b.i0) * (1 - b.w1) + at(a.i1, b.i1) * b.w1;
        const float v = top_row * (1 - a.w1) + bottom_row * a.w1;
        dst[(c * height + y) * width + x] = v / 127.5f - 1.0f;
      }
    }
  return out;
}

int resolved_image_crf(const ImageCondition& image, const std::vector<int>& model_version) {
  return image.crf < 0 ? version_defaults(model_version).image_crf : image.crf;
}

void check_image_crf(const ImageCondition& image, const std::vector<int>& model_version) {
#if LTX2_WITH_MEDIA
  (void)image;
  (void)model_version;
#else
  const int crf = resolved_image_crf(image, model_version);
  LTX2_CHECK(crf == 0,
             "--image {}: H.264 re-compression (crf {}) needs FFmpeg, which this build lacks; pass crf 0",
             image.path, crf);
#endif
}

Tensor load_conditioning_image(const ImageCondition& image, int64_t height, int64_t width,
                               const std::vector<int>& model_version) {
  // The reader's messages start with the path; the flag goes in front, as the request's
  // validation puts it (an image may change between that check and the run).
  Tensor rgb;
  try {
    rgb = media::read_image(image.path);
  } catch (const Error& e) {
    LTX2_FAIL("--image {}", e.what());
  }
  const int crf = resolved_image_crf(image, model_version);
#if LTX2_WITH_MEDIA
  if (crf > 0) rgb = media::h264_recompress_image(rgb, crf);
#else
  LTX2_CHECK(crf == 0, "--image {}: H.264 re-compression (crf {}) needs FFmpeg, which this build lacks",
             image.path, crf);
#endif
  return preprocess_image(rgb, height, width);
}

VideoConditioning image_conditioning_item(const video_vae::VideoEncoder& encoder, const Tensor& pixels,
                                          const ImageCondition& image, bool as_keyframe) {
  // The latents of a run live on the host in float32, wherever the encoder runs.
  const Tensor latent = encoder.encode(pixels).to(Device::cpu()).to(DType::F32);
  const auto strength = static_cast<float>(image.strength);
  if (image.frame == 0 && !as_keyframe) return VideoConditionByLatentIndex{latent, strength, 0};
  return VideoConditionByKeyframeIndex{latent, image.frame, strength};
}

}  // namespace ltx2::pipeline
