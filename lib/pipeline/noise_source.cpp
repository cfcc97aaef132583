// Noise sources of a pipeline run (see noise_source.h).
#include "pipeline/noise_source.h"

#include "core/error.h"

namespace ltx2::pipeline {

Tensor PhiloxNoiseSource::draw(NoiseDraw which, const Shape& shape) {
  return generator_.normal(static_cast<uint64_t>(which), shape);
}

Tensor RecordedNoiseSource::draw(NoiseDraw which, const Shape& shape) {
  LTX2_CHECK(next_ < draws_.size(), "recorded noise: draw {} ({}) asked for, only {} recorded", next_,
             static_cast<uint64_t>(which), draws_.size());
  const Tensor& t = draws_[next_];
  LTX2_CHECK(t.shape() == shape, "recorded noise: draw {} is {}, the pipeline needs {}", next_,
             shape_str(t.shape()), shape_str(shape));
  ++next_;
  return t.to(DType::F32);
}

}  // namespace ltx2::pipeline
