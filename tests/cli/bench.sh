#!/usr/bin/env bash
# `ltx2 bench`: refuses a CPU device with a one-line message naming the flag, and needs a
# subcommand. (The timed runs themselves need a GPU: scripts/gpu_build.sh and docs/gpu.md.)
set -uo pipefail
bin="$LTX2_BIN/ltx2"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$bin" bench gemm --device cpu 2>&1); rc=$?
[ "$rc" -eq 1 ] || fail "bench on cpu exited $rc: $out"
echo "$out" | grep -q -- "--device must be a GPU" || fail "bench on cpu said: $out"

"$bin" bench >/dev/null 2>&1 && fail "bench without a subcommand succeeded"
"$bin" bench attention --iterations 0 >/dev/null 2>&1 && fail "bench accepted --iterations 0"
echo "ok"
