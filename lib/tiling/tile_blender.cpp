// The tile blender: per temporal group, mask-weighted sums on the device, released as frames are final.
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
      remaining_(plan.temporal_groups, 0),
      received_(plan.tiles.size(), false) {
  for (const auto& t : plan_.tiles) {
    remaining_[t.temporal_group]++;
    masks_.push_back({mask_tensor(t.masks[0], 0).to(device), mask_tensor(t.masks[1], 1).to(device),
                      mask_tensor(t.masks[2], 2).to(device)});
  }
  if (!plan_.tiles.empty()) current_ = make_buffer(0);
}

TileBlender::Buffer TileBlender::make_buffer(size_t group) const {
  const Range* f = nullptr;
  for (const auto& t : plan_.tiles)
    if (t.temporal_group == group) f = &t.out[0];
  const int64_t H = plan_.out_extent[1], W = plan_.out_extent[2];
  Buffer b;
  b.start = f->start;
  b.end = f->stop;
  b.out = Tensor::zeros({batch_, channels_, b.end - b.start, H, W}, DType::F32, device_);
  if (!plan_.masks_complementary)
    b.weight = Tensor::zeros({1, 1, b.end - b.start, H, W}, DType::F32, device_);
  return b;
}

Tensor TileBlender::release(const Buffer& b, int64_t frames) const {
  Tensor chunk = b.out.slice(2, 0, frames);
  if (b.weight.defined()) chunk = ops::div(chunk, ops::maximum(b.weight.slice(2, 0, frames), min_weight_));
  return chunk.contiguous();
}

std::vector<Tensor> TileBlender::add(size_t tile_index, const Tensor& tile_values) {
  LTX2_CHECK(tile_index < plan_.tiles.size() && !received_[tile_index],
             "tile blender: tile {} is out of range or was already added", tile_index);
  const Tile& tile = plan_.tiles[tile_index];
  LTX2_CHECK(tile.temporal_group == group_,
             "tile blender: tile {} belongs to temporal group {}, "
             "but group {} is not complete yet",
             tile_index, tile.temporal_group, group_);
  const auto& [fa, ha, wa] = tile.out;
  const Shape expected = {batch_, channels_, fa.length(), ha.length(), wa.length()};
  LTX2_CHECK(tile_values.shape() == expected, "tile blender: tile {} is {}, expected {}", tile_index,
             tile_values.str(), shape_str(expected));
  received_[tile_index] = true;

  if (device_.is_cpu() && tile_values.dtype() == DType::F32) {
    add_on_host(tile, tile_values.contiguous());
  } else {
    const auto& [fm, hm, wm] = masks_[tile_index];
    const Tensor mask = ops::mul(ops::mul(fm, hm), wm);
    auto region = [&](const Tensor& buffer) {
      return buffer.slice(3, ha.start, ha.stop).slice(4, wa.start, wa.stop);
    };
    Tensor out_region = region(current_.out);
    out_region.copy_(ops::add(out_region, ops::mul(tile_values, mask)));
    if (current_.weight.defined()) {
      Tensor weight_region = region(current_.weight);
      weight_region.copy_(ops::add(weight_region, mask));
    }
  }

  std::vector<Tensor> chunks;
  if (--remaining_[group_] > 0) return chunks;
  if (group_ + 1 == plan_.temporal_groups) {
    chunks.push_back(release(current_, current_.end - current_.start));
    current_ = Buffer();
  } else {
    Buffer next = make_buffer(group_ + 1);
    const int64_t overlap = current_.end - next.start;
    if (overlap > 0) {
      const int64_t n = current_.end - current_.start;
      next.out.slice(2, 0, overlap).copy_(current_.out.slice(2, n - overlap, n));
      if (next.weight.defined())
        next.weight.slice(2, 0, overlap).copy_(current_.weight.slice(2, n - overlap, n));
    }
    const int64_t ready = next.start - current_.start;
    if (ready > 0) chunks.push_back(release(current_, ready));
    current_ = std::move(next);
  }
  ++group_;
  return chunks;
}

void TileBlender::add_on_host(const Tile& tile, const Tensor& values) {
  const auto& [fa, ha, wa] = tile.out;
  const std::vector<float>& mf = tile.masks[0];
  const std::vector<float>& mh = tile.masks[1];
  const float* mw = tile.masks[2].data();
  const int64_t tile_frames = fa.length(), rows = ha.length(), cols = wa.length();
  const int64_t frames = current_.end - current_.start, H = plan_.out_extent[1], W = plan_.out_extent[2];
  const int64_t first = fa.start - current_.start, planes = batch_ * channels_;
  const float* src = values.data<float>();
  float* out = current_.out.data<float>();
  float* weight = current_.weight.defined() ? current_.weight.data<float>() : nullptr;
#pragma omp parallel for collapse(2) \
    schedule(static) if (planes * tile_frames * rows * cols > (int64_t{1} << 16))
  for (int64_t f = 0; f < tile_frames; ++f)
    for (int64_t y = 0; y < rows; ++y) {
      const float frame_row = mf[f] * mh[y];
      for (int64_t p = 0; p < planes; ++p) {
        const float* __restrict s = src + ((p * tile_frames + f) * rows + y) * cols;
        float* __restrict o = out + ((p * frames + first + f) * H + ha.start + y) * W + wa.start;
        for (int64_t x = 0; x < cols; ++x) o[x] = o[x] + s[x] * (frame_row * mw[x]);
      }
      if (weight != nullptr) {
        float* __restrict w = weight + ((first + f) * H + ha.start + y) * W + wa.start;
        for (int64_t x = 0; x < cols; ++x) w[x] = w[x] + frame_row * mw[x];
      }
    }
}

}  // namespace ltx2::tiling
