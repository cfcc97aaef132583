// The reference decode plan, its normalisation, the temporal-split guard, and
// assembly of decoded tiles (one float32 row accumulator per thread, written out as float or 8-bit).
#include "parallel/vae_tile_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>

#include "core/error.h"
#include "ops/rgb8.h"

namespace ltx2::parallel {

TilePlan plan_vae_tiles(const GridExtent& latent, const GridTiling& tiling,
                        const std::array<int64_t, 3>& scale) {
  return tiling::plan_tiles(latent, tiling, {scale, true, tiling::RampValues::Fractions});
}

Tensor dense_blend_weights(const TilePlan& plan) {
  const GridExtent& e = plan.out_extent;
  std::vector<float> w(static_cast<size_t>(e[0] * e[1] * e[2]), 0.f);
  for (const tiling::Tile& t : plan.tiles)
    for (int64_t f = 0; f < t.out[0].length(); ++f)
      for (int64_t h = 0; h < t.out[1].length(); ++h)
        for (int64_t x = 0; x < t.out[2].length(); ++x) {
          const int64_t at = ((t.out[0].start + f) * e[1] + t.out[1].start + h) * e[2] + t.out[2].start + x;
          w[at] += t.masks[0][f] * t.masks[1][h] * t.masks[2][x];
        }
  for (float& v : w) v = std::max(v, 1e-8f);
  return Tensor::from_vector(w, {e[0], e[1], e[2]});
}

int64_t sgpu_temporal_chunks(int64_t pixel_frames, int64_t tile_frames, int64_t overlap_frames) {
  LTX2_CHECK(tile_frames > overlap_frames, "temporal tile of {} frames must exceed its overlap {}",
             tile_frames, overlap_frames);
  const int64_t stride = tile_frames - overlap_frames;
  return std::max<int64_t>(1, (pixel_frames - 1 + stride - 1) / stride);
}

void check_single_temporal_split(const TilePlan& plan, const AxisTiling& frames,
                                 const std::function<int64_t(int64_t pixel_frames)>& sgpu_chunks) {
  const int64_t frame_tiles = frames.by == AxisTiling::By::Count ? frames.value : 1;
  if (frame_tiles <= 1 || !sgpu_chunks) return;
  for (const tiling::Tile& t : plan.tiles) {
    const int64_t pixel_frames = t.out[0].length();
    const int64_t chunks = sgpu_chunks(pixel_frames);
    LTX2_CHECK(
        chunks <= 1,
        "VAE decode: multi-GPU temporal tiling ({} frame tiles) cannot be combined with single-GPU temporal "
        "tiling that would split a tile again ({} frames -> {} chunks); use only one",
        frame_tiles, pixel_frames, chunks);
  }
}

std::vector<std::pair<int64_t, int64_t>> temporal_batches(int64_t pixel_frames, int64_t num_batches) {
  LTX2_CHECK(num_batches >= 1, "temporal_batches: need at least one batch, got {}", num_batches);
  const int64_t size = (pixel_frames + num_batches - 1) / num_batches;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t k = 0; k < num_batches; ++k) {
    const int64_t start = k * size, stop = std::min((k + 1) * size, pixel_frames);
    if (start < stop) out.emplace_back(start, stop);
  }
  return out;
}

std::vector<int64_t> assembly_order(int64_t num_tiles, int world_size) {
  std::vector<int64_t> order;
  for (int r = 0; r < world_size; ++r)
    for (int64_t t : tiles_for_rank(num_tiles, r, world_size)) order.push_back(t);
  return order;
}

namespace {

// One tile's row of n values (channels interleaved) times their weights, added into the blend row
// `acc`: value * (frame_row_weight * column_weights[i]), column_weights holding each column's
// mask once per channel, so that the loop is flat (and vectorises).
template <typename T, bool kDecoded>
void accumulate_row(float* acc, const T* src, int64_t n, float frame_row_weight,
                    const float* column_weights) {
  for (int64_t i = 0; i < n; ++i) {
    float v;
    if constexpr (std::is_same_v<T, uint16_t>)
      v = bf16_to_f32(src[i]);
    else
      v = src[i];
    if constexpr (kDecoded) v = ops::from_vae_range(v);
    acc[i] += v * (frame_row_weight * column_weights[i]);
  }
}

// The shared blend of assemble_frames / assemble_frames_rgb8: store_row(index of the row's first
// value in the output, blended row, values) per output row.
template <typename StoreRow>
void blend(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t frame_start,
           int64_t frame_stop, const Tensor& dense_weights, TileValues values, int64_t channels,
           const StoreRow& store_row) {
  const GridExtent& e = plan.out_extent;
  struct Source {
    const tiling::Tile* tile;
    Tensor pixels;  // contiguous
    const void* data;
    std::vector<float> columns;  // the width mask, each value `channels` times
  };
  std::vector<Source> sources;
  for (const DecodedTile& d : tiles) {
    const tiling::Tile& t = plan.tiles.at(static_cast<size_t>(d.tile));
    LTX2_CHECK(d.pixels.dim() == 4 && d.pixels.size(0) == t.out[0].length() &&
                   d.pixels.size(1) == t.out[1].length() && d.pixels.size(2) == t.out[2].length() &&
                   d.pixels.size(3) == channels,
               "assemble_frames: tile {} pixels {} do not match its box {}x{}x{}x{}", d.tile,
               shape_str(d.pixels.shape()), t.out[0].length(), t.out[1].length(), t.out[2].length(),
               channels);
    LTX2_CHECK(
        d.pixels.device().is_cpu() && (d.pixels.dtype() == DType::F32 || d.pixels.dtype() == DType::BF16),
        "assemble_frames: tile {} pixels {} must be f32 or bf16 on the CPU", d.tile, d.pixels.str());
    if (std::max(frame_start, t.out[0].start) < std::min(frame_stop, t.out[0].stop))
      sources.push_back({&t, d.pixels.contiguous(), nullptr, {}});
  }
  for (Source& src : sources) {
    src.data = src.pixels.data_ptr();
    for (float m : src.tile->masks[2])
      src.columns.insert(src.columns.end(), static_cast<size_t>(channels), m);
  }
  const float* weights = nullptr;
  Tensor dense;
  if (dense_weights.defined()) {
    LTX2_CHECK(dense_weights.shape() == (Shape{e[0], e[1], e[2]}) && dense_weights.dtype() == DType::F32,
               "assemble_frames: dense weights {} are not f32 [{}, {}, {}]", dense_weights.str(), e[0], e[1],
               e[2]);
    dense = dense_weights.to(Device::cpu()).contiguous();
    weights = dense.data<float>();
  }
  const int64_t frames = frame_stop - frame_start, H = e[1], W = e[2];
  const bool decoded = values == TileValues::Decoded;
#pragma omp parallel if (frames * H * W > (int64_t{1} << 15))
  {
    std::vector<float> acc(static_cast<size_t>(W * channels));
#pragma omp for collapse(2) schedule(static)
    for (int64_t f = frame_start; f < frame_stop; ++f)
      for (int64_t y = 0; y < H; ++y) {
        std::fill(acc.begin(), acc.end(), 0.f);
        for (const Source& s : sources) {
          const tiling::Tile& t = *s.tile;
          if (f < t.out[0].start || f >= t.out[0].stop || y < t.out[1].start || y >= t.out[1].stop) continue;
          const int64_t tf = f - t.out[0].start, ty = y - t.out[1].start;
          const int64_t n = t.out[2].length() * channels;
          const float frame_row = t.masks[0][tf] * t.masks[1][ty];
          const int64_t at = (tf * t.out[1].length() + ty) * n;
          float* row = acc.data() + t.out[2].start * channels;
          const float* columns = s.columns.data();
          if (s.pixels.dtype() == DType::F32) {
            const float* src = static_cast<const float*>(s.data) + at;
            decoded ? accumulate_row<float, true>(row, src, n, frame_row, columns)
                    : accumulate_row<float, false>(row, src, n, frame_row, columns);
          } else {
            const uint16_t* src = static_cast<const uint16_t*>(s.data) + at;
            decoded ? accumulate_row<uint16_t, true>(row, src, n, frame_row, columns)
                    : accumulate_row<uint16_t, false>(row, src, n, frame_row, columns);
          }
        }
        if (weights) {
          const float* w = weights + (f * H + y) * W;
          for (int64_t x = 0; x < W; ++x)
            for (int64_t c = 0; c < channels; ++c) acc[x * channels + c] = acc[x * channels + c] / w[x];
        }
        store_row(((f - frame_start) * H + y) * W * channels, acc.data(), W * channels);
      }
  }
}

void check_frames(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t frame_start,
                  int64_t frame_stop) {
  LTX2_CHECK(!tiles.empty(), "assemble_frames: no decoded tiles");
  LTX2_CHECK(0 <= frame_start && frame_start < frame_stop && frame_stop <= plan.out_extent[0],
             "assemble_frames: frames [{}, {}) outside the video's {}", frame_start, frame_stop,
             plan.out_extent[0]);
}

}  // namespace

Tensor assemble_frames(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t frame_start,
                       int64_t frame_stop, const Tensor& dense_weights, TileValues values) {
  check_frames(plan, tiles, frame_start, frame_stop);
  const GridExtent& e = plan.out_extent;
  const int64_t channels = tiles.front().pixels.size(3);
  Tensor out = Tensor::empty({frame_stop - frame_start, e[1], e[2], channels});
  float* o = out.data<float>();
  blend(plan, tiles, frame_start, frame_stop, dense_weights, values, channels,
        [o](int64_t at, const float* row, int64_t n) { std::copy_n(row, n, o + at); });
  return out;
}

Tensor assemble_frames_rgb8(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t frame_start,
                            int64_t frame_stop, const Tensor& dense_weights, TileValues values) {
  check_frames(plan, tiles, frame_start, frame_stop);
  const GridExtent& e = plan.out_extent;
  const int64_t channels = tiles.front().pixels.size(3);
  Tensor out = Tensor::empty({frame_stop - frame_start, e[1], e[2], channels}, DType::U8);
  uint8_t* o = out.data<uint8_t>();
  blend(plan, tiles, frame_start, frame_stop, dense_weights, values, channels,
        [o](int64_t at, const float* row, int64_t n) {
          // Restrict: a byte store may alias anything, the closure's pointer included, which would
          // keep the loop from vectorising.
          uint8_t* __restrict dst = o + at;
          const float* __restrict src = row;
          for (int64_t i = 0; i < n; ++i) dst[i] = ops::unit_to_u8(src[i]);
        });
  return out;
}

}  // namespace ltx2::parallel
