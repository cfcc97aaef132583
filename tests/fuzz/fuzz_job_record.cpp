// libFuzzer target: any byte string as a job or result record must either decode or throw
// ltx2::Error, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "runtime/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ltx2::runtime::decode_record(data, size, "fuzz record");
  } catch (const ltx2::Error&) {
  }
  return 0;
}
