// The image as prompt enhancement shows it to Gemma 3 (the reference's generate_enhanced_prompt with
// an image, then Gemma3Processor): the decoded RGB image is first resized so its long side is 896
// (resize_aspect_ratio_preserving: torch's bilinear interpolate on the uint8 image, then a centre
// crop), and the image processor then resizes that to the vision tower's square input with PIL's
// bilinear filter, rescales by 1/255 and normalises by its mean and std, channels first.
//
// Both resizes work on 8-bit samples with the integer arithmetic of their library (fixed-point
// weights, an 8-bit intermediate image between the horizontal and the vertical pass, rounding to
// nearest), so the pixels match the reference's exactly rather than within a level.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace ltx2 {

struct GemmaVisionConfig;

// The reference's image_long_side for the enhancer's image.
inline constexpr int64_t kEnhanceImageLongSide = 896;

// Images here are float32 [H, W, 3] holding the 8-bit values 0..255 (media::read_image's result).

// torch.nn.functional.interpolate(mode="bilinear", align_corners=False, antialias=False) on a uint8
// image (ATen's separable uint8 kernel: int16 weights at the finest precision that fits, width
// first), to height x width.
Tensor resize_bilinear_like_torch_u8(const Tensor& image, int64_t height, int64_t width);

// The reference's resize_aspect_ratio_preserving(image, long_side) on a uint8 image: the target is
// int(side * long_side / max side) on each side, reached by resizing to cover it (ceil of the
// scaled sides) and cropping the centre.
Tensor resize_long_side_like_reference(const Tensor& image, int64_t long_side = kEnhanceImageLongSide);

// PIL's Image.resize(size, Image.BILINEAR) on an 8-bit RGB image (a triangle filter widened by the
// scale when shrinking, 22-bit fixed-point weights, horizontal pass first).
Tensor resize_bilinear_like_pil(const Tensor& image, int64_t height, int64_t width);

// Gemma3ImageProcessor's settings (the Gemma root's preprocessor_config.json; its defaults for the
// keys left out, the target size the vision tower's image_size).
struct GemmaImageProcessing {
  int64_t height = 0, width = 0;
  bool do_resize = true, do_rescale = true, do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> mean = {0.5f, 0.5f, 0.5f}, std = {0.5f, 0.5f, 0.5f};
};

// Reads the settings of a Gemma root (a folder's preprocessor_config.json, a packed text-encoder
// file's hf_asset__preprocessor_config.json tensor; neither: the defaults). Refuses, naming the file
// and key, what the vision tower cannot take or we do not implement: another resample filter than
// bilinear (2), pan-and-scan crops, a size other than the vision tower's image_size.
GemmaImageProcessing read_gemma_image_processing(const std::string& root, const GemmaVisionConfig& vision);

// The processor's pixel_values [1, 3, height, width] float32 of an image.
Tensor gemma3_pixel_values(const Tensor& image, const GemmaImageProcessing& settings);

}  // namespace ltx2
