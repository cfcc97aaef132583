#!/usr/bin/env bash
# Builds the fuzzers (the safetensors header parser, the fleet's job/result record decoder) with
# clang + libFuzzer + AddressSanitizer/UBSan and runs them for a bounded time (first argument,
# seconds in all; default 45, at most 60): two thirds to the header parser, one third to the
# records. Fails on any crash, leak or hang. Seeds: the headers of the golden fixtures.
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
record_srcs="tests/fuzz/fuzz_job_record.cpp lib/runtime/record.cpp lib/core/error.cpp lib/core/dtype.cpp
             lib/core/tensor.cpp lib/core/device.cpp"
if [ ! -x "$out/fuzz_job_record" ] || [ -n "$(find $record_srcs lib/runtime/record.h -newer "$out/fuzz_job_record" 2>/dev/null)" ]; then
  clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    $inc $record_srcs -lfmt -o "$out/fuzz_job_record"
fi
mkdir -p "$out/record_corpus"

# run NAME SECONDS CORPUS: one bounded fuzz run; prints its totals, exits on a finding.
run() {
  echo "fuzz: $1 for ${2}s"
  "$out/$1" "$3" -max_total_time="$2" -timeout=5 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
    2>"$out/$1.log" || { tail -40 "$out/$1.log"; echo "fuzz: $1 FAILED"; exit 1; }
  grep -E "stat::number_of_executed_units" "$out/$1.log" | tail -1
}
run fuzz_safetensors_header $((seconds * 2 / 3)) "$out/corpus"
run fuzz_job_record $((seconds - seconds * 2 / 3)) "$out/record_corpus"
echo "fuzz: clean"
