// The one-frame H.264 round trip of conditioning images: even crop, close to the input,
// deterministic, refuses a non-positive CRF.
#if LTX2_WITH_MEDIA
#include <cmath>

#include "core/error.h"
#include "media/ffmpeg/h264_image.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("h264 image: the round trip crops to even size and stays close to a smooth image") {
  std::vector<float> v;
  const int h = 35, w = 50;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) v.push_back(static_cast<float>(std::round(40 + 3 * x + 2 * y + 20 * c)));
  const Tensor image = Tensor::from_vector(v, {h, w, 3});
  const Tensor out = media::h264_recompress_image(image, 18);
  REQUIRE(out.shape() == Shape{34, 50, 3});
  const Tensor cropped = image.narrow(0, 0, 34).contiguous();
  double err = 0;
  const std::vector<float> a = out.to_vector(), b = cropped.to_vector();
  for (size_t i = 0; i < a.size(); ++i) err += std::abs(a[i] - b[i]);
  REQUIRE(err / static_cast<double>(a.size()) < 6.0);
  REQUIRE(err > 0.0);
  REQUIRE(media::h264_recompress_image(image, 18).to_vector() == a);
  REQUIRE_THROWS_WITH(media::h264_recompress_image(image, 0), Catch::Matchers::Contains("crf"));
}
#endif
