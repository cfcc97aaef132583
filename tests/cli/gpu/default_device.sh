#!/usr/bin/env bash
# The default-device rule on a GPU machine (label gpu): with no flag the generation programs run on
# the GPU in this process in bf16 and say so first; --device cpu and a machine whose GPUs are hidden
# run on the CPU in float32; --device cuda with the GPUs hidden is one line naming the flag.
source "$(dirname "$0")/../lib.bash"
export LTX2_CACHE_DIR="$scratch/cache"
small=(--height 64 --width 64 --num-frames 9)
for exe in "$LTX2_BIN/ltx2-distilled" "$LTX2_BIN/ltx2-ti2vid" "$LTX2_BIN/ltx2-one-stage" "$LTX2_BIN/ltx2-keyframes" \
  "$LTX2_BIN/ltx2-ti2vid-hq"; do
  name=$(basename "$exe")
  expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/$name.y4m" "${small[@]}"
  first=$(echo "$out" | head -1)
  echo "$first" | grep -qF "running on cuda:0 in this process, bf16" || fail "$name: first line is '$first'"
  [ -s "$scratch/$name.y4m" ] || fail "$name wrote no video"

  expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/$name-cpu.y4m" "${small[@]}" --device cpu
  echo "$out" | head -1 | grep -qF "running on the CPU in this process, float32 (--device cpu)" ||
    fail "$name --device cpu: $(echo "$out" | head -2)"

  expect_exit 0 env CUDA_VISIBLE_DEVICES= "$exe" --prompt "a cat" --output-path "$scratch/$name-hidden.y4m" "${small[@]}"
  echo "$out" | head -1 | grep -qF "running on the CPU in this process, float32 (no GPU visible)" ||
    fail "$name with the GPUs hidden: $(echo "$out" | head -2)"

  expect_exit 1 env CUDA_VISIBLE_DEVICES= "$exe" --prompt "a cat" --output-path "$scratch/x.y4m" --device cuda
  expect_contains "--device cuda: no GPU is visible"
  expect_one_line
done
finish
