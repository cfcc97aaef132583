// The tile blender: mask-weighted sums per output frame, each released as soon as it is final.
#include "tiling/tile_blender.h"

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::tiling {

namespace {

constexpr float kMinWeight = 1e-8f;

Tensor mask_tensor(const std::vector<float>& m, int axis) {
  Shape s = {1, 1, 1, 1, 1};
  s[2 + axis] = static_cast<int64_t>(m.size());
  return Tensor::from_vector(m, s);
}

}  // namespace

TileBlender::TileBlender(const TilePlan& plan, int64_t batch, int64_t channels, Device device)
    : plan_(plan),
      batch_(batch),
      channels_(channels),
      device_(device),
      min_weight_(Tensor::scalar(kMinWeight).to(device)),
      added_(plan.tiles.size(), 0),
      missing_(static_cast<size_t>(plan.out_extent[0]), 0),
      frames_(static_cast<size_t>(plan.out_extent[0])) {
  for (const auto& t : plan_.tiles) {
    for (int64_t f = t.out[0].start; f < t.out[0].stop; ++f) missing_[static_cast<size_t>(f)]++;
    masks_.push_back({mask_tensor(t.masks[0], 0).to(device), mask_tensor(t.masks[1], 1).to(device),
                      mask_tensor(t.masks[2], 2).to(device)});
  }
}

TileBlender::FrameSums& TileBlender::sums(int64_t frame) {
  FrameSums& s = frames_[static_cast<size_t>(frame)];
  if (!s.out.defined()) {
    const int64_t H = plan_.out_extent[1], W = plan_.out_extent[2];
    s.out = Tensor::zeros({batch_, channels_, 1, H, W}, DType::F32, device_);
    if (!plan_.masks_complementary) s.weight = Tensor::zeros({1, 1, 1, H, W}, DType::F32, device_);
  }
  return s;
}

std::vector<Tensor> TileBlender::add(size_t tile_index, const Tensor& values, int64_t first) {
  LTX2_CHECK(tile_index < plan_.tiles.size(), "tile blender: tile {} is not in the plan", tile_index);
  const Tile& tile = plan_.tiles[tile_index];
  const auto& [fa, ha, wa] = tile.out;
  LTX2_CHECK(values.dim() == 5, "tile blender: tile {} values {} are not [B, C, n, h, w]", tile_index,
             values.str());
  const int64_t n = values.size(2);
  const Shape expected = {batch_, channels_, n, ha.length(), wa.length()};
  LTX2_CHECK(values.shape() == expected && n >= 1 && first == added_[tile_index] && first + n <= fa.length(),
             "tile blender: tile {} frames [{}, {}) as {}: expected frames from {} of its {}, {}", tile_index,
             first, first + n, values.str(), added_[tile_index], fa.length(), shape_str(expected));
  added_[tile_index] += n;

  const bool on_host = device_.is_cpu() && values.dtype() == DType::F32;
  const Tensor host_values = on_host ? values.contiguous() : Tensor();
  const auto& [fm, hm, wm] = masks_[tile_index];
  for (int64_t j = 0; j < n; ++j) {
    const int64_t f = first + j;  // the tile's frame
    FrameSums& to = sums(fa.start + f);
    if (on_host) {
      add_on_host(tile, f, n, host_values.data<float>() + j * ha.length() * wa.length(), to);
    } else {
      const Tensor mask = ops::mul(ops::mul(fm.slice(2, f, f + 1), hm), wm);
      auto region = [&](const Tensor& s) {
        return s.slice(3, ha.start, ha.stop).slice(4, wa.start, wa.stop);
      };
      Tensor out_region = region(to.out);
      out_region.copy_(ops::add(out_region, ops::mul(values.slice(2, j, j + 1), mask)));
      if (to.weight.defined()) {
        Tensor weight_region = region(to.weight);
        weight_region.copy_(ops::add(weight_region, mask));
      }
    }
    --missing_[static_cast<size_t>(fa.start + f)];
  }

  std::vector<Tensor> finished;
  while (released_ < static_cast<int64_t>(missing_.size()) && missing_[static_cast<size_t>(released_)] == 0) {
    FrameSums s = std::move(frames_[static_cast<size_t>(released_)]);
    frames_[static_cast<size_t>(released_)] = FrameSums();
    ++released_;
    finished.push_back(s.weight.defined() ? ops::div(s.out, ops::maximum(s.weight, min_weight_)) : s.out);
  }
  return finished;
}

void TileBlender::add_on_host(const Tile& tile, int64_t f, int64_t run_frames, const float* values,
                              FrameSums& to) {
  const Range& ha = tile.out[1];
  const Range& wa = tile.out[2];
  const float mf = tile.masks[0][static_cast<size_t>(f)];
  const std::vector<float>& mh = tile.masks[1];
  const float* mw = tile.masks[2].data();
  const int64_t rows = ha.length(), cols = wa.length();
  const int64_t H = plan_.out_extent[1], W = plan_.out_extent[2], planes = batch_ * channels_;
  float* out = to.out.data<float>();
  float* weight = to.weight.defined() ? to.weight.data<float>() : nullptr;
#pragma omp parallel for schedule(static) if (planes * rows * cols > (int64_t{1} << 16))
  for (int64_t y = 0; y < rows; ++y) {
    const float frame_row = mf * mh[static_cast<size_t>(y)];
    for (int64_t p = 0; p < planes; ++p) {
      const float* __restrict s = values + (p * run_frames * rows + y) * cols;
      float* __restrict o = out + (p * H + ha.start + y) * W + wa.start;
      for (int64_t x = 0; x < cols; ++x) o[x] = o[x] + s[x] * (frame_row * mw[x]);
    }
    if (weight != nullptr) {
      float* __restrict w = weight + (ha.start + y) * W + wa.start;
      for (int64_t x = 0; x < cols; ++x) w[x] = w[x] + frame_row * mw[x];
    }
  }
}

}  // namespace ltx2::tiling
