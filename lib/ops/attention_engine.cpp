// The attention engine mode and precision of the CUDA backend (ops/attention.h): process-wide, read
// from LTX2_ATTENTION and LTX2_ATTENTION_PRECISION on first use, set by programs, benches and
// tests. The engines themselves are in kernels/.
#include "core/error.h"
#include "ops/attention.h"
#include "ops/engine_setting.h"

namespace ltx2::ops {

namespace {

std::atomic<AttentionEngine>& attention_engine_mode() {
  return engine_setting<AttentionEngine>("LTX2_ATTENTION", &parse_attention_engine);
}

std::atomic<AttentionPrecision>& attention_precision_mode() {
  return engine_setting<AttentionPrecision>("LTX2_ATTENTION_PRECISION", &parse_attention_precision,
                                            AttentionPrecision::Bf16);
}

}  // namespace

AttentionEngine attention_engine() {
  return attention_engine_mode().load();
}

void set_attention_engine(AttentionEngine engine) {
  attention_engine_mode().store(engine);
}

AttentionEngine parse_attention_engine(const std::string& name, const std::string& what) {
  if (name == "auto") return AttentionEngine::Auto;
  if (name == "wgmma") return AttentionEngine::Wgmma;
  if (name == "fa3") return AttentionEngine::Fa3;
  if (name == "cudnn") return AttentionEngine::Cudnn;
  LTX2_FAIL("{}: unknown attention engine '{}' (auto, wgmma, fa3 or cudnn)", what, name);
}

const char* attention_engine_name(AttentionEngine engine) {
  switch (engine) {
    case AttentionEngine::Auto: return "auto";
    case AttentionEngine::Wgmma: return "wgmma";
    case AttentionEngine::Fa3: return "fa3";
    case AttentionEngine::Cudnn: return "cudnn";
  }
  return "auto";
}

AttentionPrecision attention_precision() {
  return attention_precision_mode().load();
}

void set_attention_precision(AttentionPrecision precision) {
  attention_precision_mode().store(precision);
}

AttentionPrecision parse_attention_precision(const std::string& name, const std::string& what) {
  if (name == "bf16") return AttentionPrecision::Bf16;
  if (name == "8bit") return AttentionPrecision::EightBit;
  LTX2_FAIL("{}: unknown attention precision '{}' (bf16 or 8bit)", what, name);
}

const char* attention_precision_name(AttentionPrecision precision) {
  return precision == AttentionPrecision::EightBit ? "8bit" : "bf16";
}

bool cudnn_attention_built() {
#ifdef LTX2_WITH_CUDNN
  return true;
#else
  return false;
#endif
}

}  // namespace ltx2::ops
