// Image conditioning as the pipelines apply it (the reference's load_image_and_preprocess,
// resize_and_center_crop and combined_image_conditionings): a PNG becomes pixels [1, 3, 1, H, W]
// in [-1, 1] at a stage's resolution, is encoded by the video VAE encoder, and becomes a
// conditioning item (frame 0: replaces latent frame 0; frame > 0, or any frame in the keyframe
// pipeline: appended keyframe tokens).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/video_vae/encoder.h"
#include "pipeline/latent_state.h"
#include "pipeline/request.h"

namespace ltx2::pipeline {

// image [h, w, 3] float32 (0..255) -> [1, 3, 1, height, width]: resized preserving the aspect so it
// covers height x width (scale = max(height / h, width / w), size ceil(h * scale) x ceil(w * scale),
// bilinear with half-pixel centres, no antialiasing), centre-cropped, mapped by x / 127.5 - 1.
Tensor preprocess_image(const Tensor& image_hwc, int64_t height, int64_t width);

// The image's CRF with -1 resolved by the model version's default (version_defaults); 0 = no
// re-compression.
int resolved_image_crf(const ImageCondition& image, const std::vector<int>& model_version);
// Refuses, before any work, an image that needs the H.264 re-compression in a build without FFmpeg.
void check_image_crf(const ImageCondition& image, const std::vector<int>& model_version);

// Reads the PNG, re-compresses it as one H.264 frame when its resolved CRF is > 0 (the image is
// then cut to even height and width first), preprocesses it for height x width and returns the
// pixels.
Tensor load_conditioning_image(const ImageCondition& image, int64_t height, int64_t width,
                               const std::vector<int>& model_version);

// Encodes pixels [1, 3, 1, H, W] and wraps the latent as the item for the image's frame index: frame
// 0 replaces latent frame 0 and a later frame appends keyframe tokens (combined_image_conditionings),
// or, `as_keyframe`, any frame appends keyframe tokens (image_conditionings_by_adding_guiding_latent,
// the keyframe pipeline's).
VideoConditioning image_conditioning_item(const video_vae::VideoEncoder& encoder, const Tensor& pixels,
                                          const ImageCondition& image, bool as_keyframe);

}  // namespace ltx2::pipeline
