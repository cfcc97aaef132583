#!/usr/bin/env bash
# `ltx2 bench`: refuses a CPU device with a one-line message naming the flag, and needs a
# subcommand. (The timed kernel runs need a GPU: scripts/gpu_build.sh and docs/gpu.md.) `bench
# pipeline` runs on the CPU with the tiny model, `bench encode` on synthetic frames.
set -uo pipefail
bin="$LTX2_BIN/ltx2"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$bin" bench gemm --device cpu 2>&1); rc=$?
[ "$rc" -eq 1 ] || fail "bench on cpu exited $rc: $out"
echo "$out" | grep -q -- "--device must be a GPU" || fail "bench on cpu said: $out"

"$bin" bench >/dev/null 2>&1 && fail "bench without a subcommand succeeded"
"$bin" bench attention --iterations 0 >/dev/null 2>&1 && fail "bench accepted --iterations 0"
out=$("$bin" bench transformer --quantization fp8-cast 2>&1); rc=$?
[ "$rc" -ne 0 ] && echo "$out" | grep -q -- "--quantization" || fail "bench transformer --quantization fp8-cast: $rc $out"

# `ltx2 bench scaling` names what is wrong before starting any process.
out=$("$bin" bench scaling --model 7b 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--model must be 19b or 22b, got '7b'" || fail "bench scaling --model 7b: $rc $out"
out=$(CUDA_VISIBLE_DEVICES= "$bin" bench scaling 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q "no GPU is visible" || fail "bench scaling without GPUs: $rc $out"
out=$(CUDA_VISIBLE_DEVICES=0 "$bin" bench scaling --worlds 2 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--worlds 2 but only 1 GPU(s) given" || fail "bench scaling --worlds 2: $rc $out"
"$bin" bench scaling --worlds 0 >/dev/null 2>&1 && fail "bench scaling accepted --worlds 0"

# `ltx2 bench vae` names a bad model, refuses a CPU device and a machine without a GPU in one line.
out=$("$bin" bench vae --help 2>&1) && echo "$out" | grep -q "1024x1536x121" || fail "bench vae --help: $out"
out=$("$bin" bench vae --model 7 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--model must be 2.0, 2.3 or 2.5, got '7'" || fail "bench vae --model 7: $rc $out"
out=$("$bin" bench vae --device cpu 2>&1); rc=$?
[ "$rc" -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q -- "--device must be a GPU" ||
  fail "bench vae on cpu: $rc $out"
out=$(CUDA_VISIBLE_DEVICES= "$bin" bench vae 2>&1); rc=$?
[ "$rc" -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] &&
  echo "$out" | grep -q "no GPU cuda:0 is visible\|built without the CUDA backend" || fail "bench vae without GPUs: $rc $out"

# `ltx2 bench pipeline` times every phase of the tiny pipeline (the numbers are not checked).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ltx2-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=$(LTX2_CACHE_DIR="$tmp/cache" "$bin" bench pipeline --height 64 --width 64 --num-frames 1 --repeat 1 \
      --json "$tmp/bench.json" 2>&1) || fail "bench pipeline failed: $out"
for phase in "text encode" "stage 1" "upsample" "stage 2" "decode" "write output" "total"; do
  echo "$out" | grep -q "^  $phase " || fail "bench pipeline printed no '$phase': $out"
  grep -q "\"$phase\": {" "$tmp/bench.json" || fail "bench pipeline JSON lacks '$phase'"
done
# Every pipeline: the HQ one has both stages; the one-stage one neither upsample nor stage 2.
out=$(LTX2_CACHE_DIR="$tmp/cache" "$bin" bench pipeline --pipeline ti2vid-hq --height 64 --width 64 --num-frames 1 \
      --num-inference-steps 2 --repeat 1 2>&1) || fail "bench pipeline --pipeline ti2vid-hq failed: $out"
echo "$out" | grep -q "^  stage 2 " || fail "bench pipeline --pipeline ti2vid-hq printed no 'stage 2': $out"
out=$(LTX2_CACHE_DIR="$tmp/cache" "$bin" bench pipeline --pipeline one-stage --height 64 --width 96 --num-frames 1 \
      --num-inference-steps 2 --repeat 1 --json "$tmp/one.json" 2>&1) || fail "bench pipeline --pipeline one-stage failed: $out"
echo "$out" | grep -q "^  stage 1 " || fail "bench pipeline --pipeline one-stage printed no 'stage 1': $out"
grep -q '"stage 2": {' "$tmp/one.json" && fail "bench pipeline --pipeline one-stage has a stage 2"
grep -q '"pipeline": "one-stage"' "$tmp/one.json" || fail "bench pipeline JSON does not name the one-stage pipeline"
# Its model flags are the generation programs' (the same fields, the same checks).
out=$("$bin" bench pipeline --pipeline ti2vid --distilled-lora "$tmp/l.safetensors" x 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--distilled-lora $tmp/l.safetensors STRENGTH: 'x' is not a number" ||
  fail "bench pipeline --distilled-lora PATH x: $rc $out"
out=$("$bin" bench pipeline --lora "$tmp/none.safetensors" 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--lora $tmp/none.safetensors: no such file" ||
  fail "bench pipeline --lora missing: $rc $out"
# `ltx2 bench encode` times the conversion and the encoder on a small clip; odd sizes are refused.
out=$("$bin" bench encode --height 64 --width 96 --frames 5 --encoder-threads 2 --json "$tmp/encode.json" 2>&1) ||
  fail "bench encode failed: $out"
for row in "rgb -> yuv420p alone" "writer: conversion" "writer: libx264" "writer: total"; do
  echo "$out" | grep -q "^  $row" || fail "bench encode printed no '$row': $out"
done
for key in convert_fps writer_encode_s writer_total_s mp4_bytes; do
  grep -q "\"$key\":" "$tmp/encode.json" || fail "bench encode JSON lacks '$key'"
done
out=$("$bin" bench encode --height 63 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--height 63 and --width 1536 must be even" || fail "bench encode --height 63: $rc $out"
# `ltx2 bench sp`: the SP attention's bytes per layer equal the formula on every rank.
out=$("$bin" bench sp --ranks 2 --steps 1 --threads-per-rank 1 2>&1) || fail "bench sp failed: $out"
[ "$(echo "$out" | awk '$1 ~ /^[01]$/ && $4 == "1.0000" && $7 == "1.0000"' | wc -l)" -eq 2 ] ||
  fail "bench sp: bytes off the formula: $out"
# `ltx2 bench sp --all-to-all`: the communicator's all-to-all over sizes on 3 CPU ranks, a row per
# size with busbw = algbw x (P-1)/P, in the table and the JSON; the sweep's mistakes in one line.
out=$("$bin" bench sp --all-to-all --ranks 3 --min-bytes 4096 --max-bytes 65536 --iterations 3 --warmup 1 \
      --json "$tmp/a2a.json" 2>&1) || fail "bench sp --all-to-all failed: $out"
echo "$out" | grep -q "^all_to_all on 3 CPU ranks (shared memory)" || fail "bench sp --all-to-all header: $out"
rows=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF == 5' | wc -l)
[ "$rows" -eq 5 ] || fail "bench sp --all-to-all printed $rows rows for 4 KiB..64 KiB: $out"
off_by=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF == 5 { d = $4 - $3 * 2 / 3; if (d > 0.01 || d < -0.01) print }')
[ -z "$off_by" ] || fail "bench sp --all-to-all: busbw is not algbw x 2/3: $off_by"
[ "$(grep -c '"busbw_gbps"' "$tmp/a2a.json")" -eq 5 ] || fail "bench sp --all-to-all JSON: $(cat "$tmp/a2a.json")"
out=$("$bin" bench sp --all-to-all --min-bytes 2048 --max-bytes 1024 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--min-bytes 2048 exceeds --max-bytes 1024" || fail "bench sp bytes: $rc $out"
out=$("$bin" bench sp --gpus 0 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q -- "--gpus applies to --all-to-all only" || fail "bench sp --gpus: $rc $out"
echo "ok"
