#!/usr/bin/env bash
# Builds the safetensors header fuzzer with clang + libFuzzer + AddressSanitizer and runs it for a
# bounded time (first argument, seconds; default 45, at most 60). Fails on any crash, leak or hang.
# Seeds: the headers of the golden fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-45}
[ "$seconds" -gt 60 ] && seconds=60
out=build/fuzz
mkdir -p "$out/corpus"
inc="-Ilib -I."
srcs="tests/fuzz/fuzz_safetensors_header.cpp lib/io/safetensors.cpp lib/core/error.cpp lib/core/dtype.cpp
      lib/core/tensor.cpp lib/core/device.cpp"
if [ ! -x "$out/fuzz_safetensors_header" ] || [ -n "$(find $srcs lib/io/safetensors.h -newer "$out/fuzz_safetensors_header" 2>/dev/null)" ]; then
  clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    $inc $srcs -lfmt -o "$out/fuzz_safetensors_header"
fi
for f in tests/data/golden/*/*.safetensors; do
  n=$(basename "$(dirname "$f")")_$(basename "$f")
  head -c 4096 "$f" > "$out/corpus/$n"
done
echo "fuzz: safetensors header parser for ${seconds}s"
"$out/fuzz_safetensors_header" "$out/corpus" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
  -max_len=8192 -print_final_stats=1 2>"$out/fuzz.log" || { tail -40 "$out/fuzz.log"; echo "fuzz: FAILED"; exit 1; }
grep -E "stat::number_of_executed_units|Done" "$out/fuzz.log" | tail -2
echo "fuzz: clean"
