// The reference's H.264 re-compression of a conditioning image (media_io.preprocess with crf > 0):
// the image is cut to even height and width, converted rgb24 -> yuv420p (swscale, bilinear, the
// default BT.601 limited-range matrix), encoded as one libx264 frame (preset veryfast, the given
// CRF, one thread so the bytes do not depend on the machine), decoded again and converted back
// to rgb24. It makes the conditioning image look like the compressed frames the model was trained
// on.
#pragma once

#include "core/tensor.h"

namespace ltx2::media {

// image [h, w, 3] float32 holding 0..255 sample values -> [h & ~1, w & ~1, 3] float32 (0..255)
// after the round trip. crf > 0. Throws ltx2::Error when the codecs are missing or fail.
Tensor h264_recompress_image(const Tensor& image_hwc, int crf);

}  // namespace ltx2::media
