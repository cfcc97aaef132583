// The enhancer's image preprocessing (see gemma3_image.h). The two 8-bit resamplers follow their
// libraries' integer arithmetic (PIL's Resample.c, ATen's separable uint8 interpolation): weights
// from a triangle filter, normalised per output sample in double, turned into fixed point; each pass
// sums sample x weight from half the unit, shifts, clamps to 0..255.
#include "models/text/gemma3_image.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "models/text/gemma3_vision.h"

namespace ltx2 {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// 8-bit RGB samples, row-major [h][w][3].
struct Image8 {
  int64_t h = 0, w = 0;
  std::vector<uint8_t> px;
  uint8_t& at(int64_t y, int64_t x, int c) { return px[(y * w + x) * 3 + c]; }
  uint8_t at(int64_t y, int64_t x, int c) const { return px[(y * w + x) * 3 + c]; }
};

Image8 to_image8(const Tensor& image, const char* what) {
  LTX2_CHECK(image.dim() == 3 && image.size(2) == 3 && image.size(0) > 0 && image.size(1) > 0,
             "{}: image {} must be [H, W, 3]", what, image.str());
  const std::vector<float> v = image.to(Device::cpu()).to(DType::F32).contiguous().to_vector();
  Image8 out{image.size(0), image.size(1), std::vector<uint8_t>(v.size())};
  for (size_t i = 0; i < v.size(); ++i) {
    LTX2_CHECK(v[i] >= 0.f && v[i] <= 255.f && v[i] == std::floor(v[i]),
               "{}: the image must hold 8-bit values 0..255, found {}", what, v[i]);
    out.px[i] = static_cast<uint8_t>(v[i]);
  }
  return out;
}

Tensor from_image8(const Image8& im) {
  std::vector<float> v(im.px.begin(), im.px.end());
  return Tensor::from_vector(v, {im.h, im.w, 3});
}

// One axis' taps: output sample i reads `count[i]` inputs from `first[i]` with weights
// w[i * ksize + j] in fixed point of `precision` bits.
struct Taps {
  int64_t ksize = 0;
  int precision = 0;
  std::vector<int64_t> first, count;
  std::vector<int32_t> w;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

int32_t to_fixed(double w, int bits) {
  const double v = w * static_cast<double>(int64_t{1} << bits);
  return static_cast<int32_t>(v < 0 ? -0.5 + v : 0.5 + v);
}

// PIL's precompute_coeffs + normalize_coeffs_8bpc for the bilinear filter (support 1) over the whole
// input: the filter is stretched by the scale when shrinking (antialiasing).
Taps pil_taps(int64_t in, int64_t out) {
  constexpr int kPrecisionBits = 32 - 8 - 2;
  Taps t;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;
  t.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  t.precision = kPrecisionBits;
  t.w.assign(out * t.ksize, 0);
  std::vector<double> k(t.ksize);
  for (int64_t i = 0; i < out; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int64_t xmin = static_cast<int64_t>(center - support + 0.5);  // truncation, as C's (int)
    if (xmin < 0) xmin = 0;
    int64_t xmax = static_cast<int64_t>(center + support + 0.5);
    if (xmax > in) xmax = in;
    xmax -= xmin;
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      k[x] = triangle((static_cast<double>(x + xmin) - center + 0.5) * ss);
      ww += k[x];
    }
    for (int64_t x = 0; x < xmax; ++x) {
      if (ww != 0.0) k[x] /= ww;
      t.w[i * t.ksize + x] = to_fixed(k[x], kPrecisionBits);
    }
    t.first.push_back(xmin);
    t.count.push_back(xmax);
  }
  return t;
}

// ATen's _compute_index_ranges_int16_weights for bilinear without antialiasing (support 1 whatever
// the scale, align_corners=False): double weights normalised per output sample, then int16 at the
// largest precision (< 22 bits) at which the largest weight still fits in 15 bits.
Taps torch_u8_taps(int64_t in, int64_t out) {
  Taps t;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = 1.0;
  t.ksize = 3;  // ceil(support) * 2 + 1
  std::vector<double> w(out * t.ksize, 0.0);
  double wt_max = 0.0;
  for (int64_t i = 0; i < out; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t xsize = std::clamp<int64_t>(
        std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in) - xmin, 0, t.ksize);
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      w[i * t.ksize + j] = triangle(static_cast<double>(j + xmin) - center + 0.5);
      total += w[i * t.ksize + j];
    }
    if (total != 0.0)
      for (int64_t j = 0; j < xsize; ++j) {
        w[i * t.ksize + j] /= total;
        wt_max = std::max(wt_max, w[i * t.ksize + j]);
      }
    t.first.push_back(xmin);
    t.count.push_back(xsize);
  }
  int precision = 0;
  for (; precision < 22; ++precision)
    if (static_cast<int>(0.5 + wt_max * static_cast<double>(1 << (precision + 1))) >= (1 << 15)) break;
  t.precision = precision;
  t.w.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) t.w[i] = static_cast<int16_t>(to_fixed(w[i], precision));
  return t;
}

uint8_t fixed_sum(int64_t acc, int precision) {
  return static_cast<uint8_t>(std::clamp<int64_t>(acc >> precision, 0, 255));
}

Image8 resample_width(const Image8& in, int64_t out_w, const Taps& t) {
  Image8 out{in.h, out_w, std::vector<uint8_t>(in.h * out_w * 3)};
  for (int64_t y = 0; y < in.h; ++y)
    for (int64_t x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        int64_t acc = int64_t{1} << (t.precision - 1);
        for (int64_t j = 0; j < t.count[x]; ++j)
          acc += in.at(y, t.first[x] + j, c) * int64_t{t.w[x * t.ksize + j]};
        out.at(y, x, c) = fixed_sum(acc, t.precision);
      }
  return out;
}

Image8 resample_height(const Image8& in, int64_t out_h, const Taps& t) {
  Image8 out{out_h, in.w, std::vector<uint8_t>(out_h * in.w * 3)};
  for (int64_t y = 0; y < out_h; ++y)
    for (int64_t x = 0; x < in.w; ++x)
      for (int c = 0; c < 3; ++c) {
        int64_t acc = int64_t{1} << (t.precision - 1);
        for (int64_t j = 0; j < t.count[y]; ++j)
          acc += in.at(t.first[y] + j, x, c) * int64_t{t.w[y * t.ksize + j]};
        out.at(y, x, c) = fixed_sum(acc, t.precision);
      }
  return out;
}

// Which axis a library resamples first (into an 8-bit image, then the other): torch always the
// width; Pillow the height when the height loses more than twice as many pixels as the width does
// (its Resample.c's horizontal_first, Pillow 13), else the width.
enum class PassOrder { WidthFirst, Pillow };

// An axis whose size stays is skipped.
Image8 resize8(const Image8& in, int64_t height, int64_t width, Taps (*taps)(int64_t, int64_t),
               PassOrder order) {
  const bool height_first =
      order == PassOrder::Pillow && in.h - height > 0 && in.h - height > 2 * (in.w - width);
  Image8 x = in;
  if (height_first && height != x.h) x = resample_height(x, height, taps(x.h, height));
  if (width != x.w) x = resample_width(x, width, taps(x.w, width));
  if (height != x.h) x = resample_height(x, height, taps(x.h, height));
  return x;
}

void check_size(int64_t height, int64_t width, const char* what) {
  LTX2_CHECK(height > 0 && width > 0 && height <= 65536 && width <= 65536, "{}: cannot resize to {} x {}",
             what, width, height);
}

// The preprocessor config's text of a Gemma root, or "" when it has none.
std::string preprocessor_json(const std::string& root, std::string* origin) {
  if (fs::is_directory(root)) {
    *origin = (fs::path(root) / "preprocessor_config.json").string();
  } else {
    const auto file = SafetensorsFile::open(root);
    const std::string tensor = "hf_asset__preprocessor_config.json";
    for (const TensorInfo& t : file->tensors())
      if (t.name == tensor) {
        *origin = root + " (" + tensor + ")";
        const Tensor bytes = file->tensor(tensor).contiguous();
        LTX2_CHECK(bytes.dtype() == DType::U8, "{}: expected uint8 bytes, got {}", *origin,
                   dtype_name(bytes.dtype()));
        const auto* p = bytes.data<uint8_t>();
        return std::string(p, p + bytes.numel());
      }
    *origin = (fs::path(root).parent_path() / "preprocessor_config.json").string();
  }
  if (!fs::exists(*origin)) return "";
  std::ifstream in(*origin, std::ios::binary);
  LTX2_CHECK(in, "{}: cannot read it", *origin);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::array<float, 3> three_numbers(const json& j, const std::string& key, const std::string& origin) {
  const json& v = j.at(key);
  std::array<float, 3> out{};
  if (v.is_number()) {
    out.fill(v.get<float>());
    return out;
  }
  LTX2_CHECK(v.is_array() && v.size() == 3 && v[0].is_number() && v[1].is_number() && v[2].is_number(),
             "{}: '{}' must be a number or three numbers, got {}", origin, key, v.dump());
  for (int c = 0; c < 3; ++c) out[c] = v[c].get<float>();
  return out;
}

}  // namespace

Tensor resize_bilinear_like_torch_u8(const Tensor& image, int64_t height, int64_t width) {
  check_size(height, width, "bilinear resize");
  return from_image8(
      resize8(to_image8(image, "bilinear resize"), height, width, &torch_u8_taps, PassOrder::WidthFirst));
}

Tensor resize_bilinear_like_pil(const Tensor& image, int64_t height, int64_t width) {
  check_size(height, width, "PIL bilinear resize");
  return from_image8(
      resize8(to_image8(image, "PIL bilinear resize"), height, width, &pil_taps, PassOrder::Pillow));
}

Tensor resize_long_side_like_reference(const Tensor& image, int64_t long_side) {
  LTX2_CHECK(image.dim() == 3 && image.size(0) > 0 && image.size(1) > 0, "image {} must be [H, W, 3]",
             image.str());
  const int64_t h = image.size(0), w = image.size(1);
  // resize_aspect_ratio_preserving: Python's float arithmetic, int() truncating.
  const double scale = static_cast<double>(long_side) / static_cast<double>(std::max(h, w));
  const auto th = static_cast<int64_t>(static_cast<double>(h) * scale);
  const auto tw = static_cast<int64_t>(static_cast<double>(w) * scale);
  LTX2_CHECK(th > 0 && tw > 0, "image {} x {}: too narrow to resize to a long side of {}", w, h, long_side);
  // resize_and_center_crop: cover th x tw, then crop the centre.
  const double cover = std::max(static_cast<double>(th) / static_cast<double>(h),
                                static_cast<double>(tw) / static_cast<double>(w));
  const auto nh = static_cast<int64_t>(std::ceil(static_cast<double>(h) * cover));
  const auto nw = static_cast<int64_t>(std::ceil(static_cast<double>(w) * cover));
  const Tensor resized = resize_bilinear_like_torch_u8(image, nh, nw);
  return resized.narrow(0, (nh - th) / 2, th).narrow(1, (nw - tw) / 2, tw).contiguous();
}

GemmaImageProcessing read_gemma_image_processing(const std::string& root, const GemmaVisionConfig& vision) {
  GemmaImageProcessing s;
  s.height = s.width = vision.image_size;
  std::string origin;
  const std::string text = preprocessor_json(root, &origin);
  if (text.empty()) return s;  // Gemma3ImageProcessor's defaults
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    LTX2_FAIL("{}: not valid JSON", origin);
  }
  LTX2_CHECK(j.is_object(), "{}: expected a JSON object", origin);
  auto flag = [&](const char* key, bool fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    LTX2_CHECK(j.at(key).is_boolean(), "{}: '{}' is {}, expected true or false", origin, key,
               j.at(key).dump());
    return j.at(key).get<bool>();
  };
  auto present = [&](const char* key) { return j.contains(key) && !j.at(key).is_null(); };
  s.do_resize = flag("do_resize", true);
  s.do_rescale = flag("do_rescale", true);
  s.do_normalize = flag("do_normalize", true);
  LTX2_CHECK(!flag("do_pan_and_scan", false),
             "{}: do_pan_and_scan is true; ltx2 shows Gemma the whole image only (the reference's processor "
             "default)",
             origin);
  if (present("resample")) {
    const json& r = j.at("resample");
    LTX2_CHECK(r.is_number_integer() && r.get<int>() == 2,
               "{}: resample is {}; ltx2 implements Gemma 3's bilinear (2) only", origin, r.dump());
  }
  if (present("size")) {
    const json& size = j.at("size");
    LTX2_CHECK(size.is_object() && size.contains("height") && size.contains("width") &&
                   size.at("height").is_number_integer() && size.at("width").is_number_integer(),
               "{}: 'size' must be {{\"height\": N, \"width\": N}}, got {}", origin, size.dump());
    s.height = size.at("height").get<int64_t>();
    s.width = size.at("width").get<int64_t>();
  }
  LTX2_CHECK(s.do_resize && s.height == vision.image_size && s.width == vision.image_size,
             "{}: the processor gives {} x {} images (do_resize {}), but the vision tower takes {} x {}",
             origin, s.width, s.height, s.do_resize, vision.image_size, vision.image_size);
  if (present("rescale_factor")) {
    LTX2_CHECK(j.at("rescale_factor").is_number(), "{}: 'rescale_factor' must be a number", origin);
    s.rescale_factor = j.at("rescale_factor").get<double>();
  }
  if (present("image_mean")) s.mean = three_numbers(j, "image_mean", origin);
  if (present("image_std")) s.std = three_numbers(j, "image_std", origin);
  for (int c = 0; c < 3; ++c) LTX2_CHECK(s.std[c] != 0.f, "{}: image_std has a zero", origin);
  return s;
}

Tensor gemma3_pixel_values(const Tensor& image, const GemmaImageProcessing& s) {
  const Image8 im = to_image8(image, "Gemma image processor");
  const Image8 x = s.do_resize ? resize8(im, s.height, s.width, &pil_taps, PassOrder::Pillow) : im;
  // rescale: the samples times the factor in double, stored as float32; normalize: (x - mean) / std
  // in float32; then channels first.
  std::vector<float> out(3 * x.h * x.w);
  for (int c = 0; c < 3; ++c)
    for (int64_t y = 0; y < x.h; ++y)
      for (int64_t col = 0; col < x.w; ++col) {
        float v = static_cast<float>(x.at(y, col, c));
        if (s.do_rescale) v = static_cast<float>(static_cast<double>(x.at(y, col, c)) * s.rescale_factor);
        if (s.do_normalize) v = (v - s.mean[c]) / s.std[c];
        out[(c * x.h + y) * x.w + col] = v;
      }
  return Tensor::from_vector(out, {1, 3, x.h, x.w});
}

}  // namespace ltx2
