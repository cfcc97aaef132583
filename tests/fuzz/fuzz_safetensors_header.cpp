// libFuzzer target: any byte string as the start of a safetensors file must either parse or throw
// ltx2::Error, never crash, hang or leak.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ltx2::parse_safetensors_header(data, size, size, "fuzz.safetensors");
  } catch (const ltx2::Error&) {
  }
  return 0;
}
