#include "core/dtype.h"

#include "core/error.h"

namespace ltx2 {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::BF16: case DType::F16: return 2;
    case DType::I64: return 8;
    case DType::U8:
    case DType::Bool:
    case DType::F8E4M3:
    case DType::F8E5M2: return 1;
  }
  LTX2_FAIL("bad dtype {}", static_cast<int>(t));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
    case DType::F8E4M3: return "f8e4m3";
    case DType::F8E5M2: return "f8e5m2";
  }
  return "?";
}

const char* dtype_safetensors_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::U8: return "U8";
    case DType::Bool: return "BOOL";
    case DType::F8E4M3: return "F8_E4M3";
    case DType::F8E5M2: return "F8_E5M2";
  }
  return "?";
}

bool dtype_from_safetensors(std::string_view name, DType* out) {
  // clang-format off
  static const struct { const char* n; DType t; } table[] = {
      {"F32", DType::F32}, {"BF16", DType::BF16}, {"F16", DType::F16}, {"I32", DType::I32},
      {"I64", DType::I64}, {"U8", DType::U8}, {"BOOL", DType::Bool}, {"F8_E4M3", DType::F8E4M3},
      {"F8_E5M2", DType::F8E5M2}};
  // clang-format on
  for (const auto& e : table) {
    if (name == e.n) {
      *out = e.t;
      return true;
    }
  }
  return false;
}

bool dtype_is_floating(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 || dtype_is_float8(t);
}

bool dtype_is_float8(DType t) {
  return t == DType::F8E4M3 || t == DType::F8E5M2;
}

}  // namespace ltx2
