// The convolution engine mode of the CUDA backend (ops/conv3d.h): process-wide, read from LTX2_CONV
// on first use, set by benches and tests. The engines themselves are in kernels/.
#include "core/error.h"
#include "ops/conv3d.h"
#include "ops/engine_setting.h"

namespace ltx2::ops {

namespace {

std::atomic<ConvEngine>& conv_engine_mode() {
  return engine_setting<ConvEngine>("LTX2_CONV", &parse_conv_engine);
}

}  // namespace

ConvEngine conv_engine() {
  return conv_engine_mode().load();
}

void set_conv_engine(ConvEngine engine) {
  conv_engine_mode().store(engine);
}

ConvEngine parse_conv_engine(const std::string& name, const std::string& what) {
  if (name == "auto") return ConvEngine::Auto;
  if (name == "gemm") return ConvEngine::Gemm;
  if (name == "cudnn") return ConvEngine::Cudnn;
  LTX2_FAIL("{}: unknown convolution engine '{}' (auto, gemm or cudnn)", what, name);
}

const char* conv_engine_name(ConvEngine engine) {
  switch (engine) {
    case ConvEngine::Auto: return "auto";
    case ConvEngine::Gemm: return "gemm";
    case ConvEngine::Cudnn: return "cudnn";
  }
  return "auto";
}

bool cudnn_conv_built() {
#ifdef LTX2_WITH_CUDNN
  return true;
#else
  return false;
#endif
}

}  // namespace ltx2::ops
