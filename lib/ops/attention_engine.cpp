// The attention engine mode of the CUDA backend (ops/attention.h): process-wide, read from
// LTX2_ATTENTION on first use, set by benches and tests. The engines themselves are in kernels/.
#include "core/error.h"
#include "ops/attention.h"
#include "ops/engine_setting.h"

namespace ltx2::ops {

namespace {

std::atomic<AttentionEngine>& attention_engine_mode() {
  return engine_setting<AttentionEngine>("LTX2_ATTENTION", &parse_attention_engine);
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
  if (name == "cudnn") return AttentionEngine::Cudnn;
  LTX2_FAIL("{}: unknown attention engine '{}' (auto, wgmma or cudnn)", what, name);
}

const char* attention_engine_name(AttentionEngine engine) {
  switch (engine) {
    case AttentionEngine::Auto: return "auto";
    case AttentionEngine::Wgmma: return "wgmma";
    case AttentionEngine::Cudnn: return "cudnn";
  }
  return "auto";
}

bool cudnn_attention_built() {
#ifdef LTX2_WITH_CUDNN
  return true;
#else
  return false;
#endif
}

}  // namespace ltx2::ops
