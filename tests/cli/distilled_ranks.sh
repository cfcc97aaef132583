#!/usr/bin/env bash
# ltx2-distilled through the fleet: 1, 2 and 3 CPU ranks (sequence-parallel transformer, distributed
# VAE decode with the same tile plan) write the same MP4, byte for byte, by default the in-process
# run's (under --quantization fp8 too), and leave no worker process or shared memory behind. 64x192 needs no token padding at 1, 2 or 3
# ranks in either stage (6 and 24 video tokens); 64x320 at 3 ranks pads both (10 and 40 tokens).
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
run=(--prompt "a fox in the snow" --seed 3 --height 64 --width 192 --num-frames 9 --vae-tiles 1x2)

expect_exit 0 "$exe" "${run[@]}" --output-path "$scratch/local.mp4"
expect_mp4 "$scratch/local.mp4" 9 192 64 24
for ranks in 1 2 3; do
  expect_exit_no_workers 0 "$exe" "${run[@]}" --ranks "$ranks" --output-path "$scratch/r$ranks.mp4"
  expect_mp4 "$scratch/r$ranks.mp4" 9 192 64 24
  cmp -s "$scratch/r1.mp4" "$scratch/r$ranks.mp4" || fail "--ranks $ranks differs from --ranks 1"
done
# The in-process run decodes without tiles at this size (AUTO tiling), the fleet with --vae-tiles:
# only the transformer and audio are the same there, so compare the fleet runs with each other and
# the in-process run with a one-tile fleet.
expect_exit_no_workers 0 "$exe" "${run[@]/1x2/1x1}" --ranks 2 --output-path "$scratch/r2_one_tile.mp4"
cmp -s "$scratch/local.mp4" "$scratch/r2_one_tile.mp4" || fail "--ranks 2 with one decode tile differs from the in-process run"
# 'ranks' is the reference's split of the rank count: 1x2 on 2 ranks.
expect_exit_no_workers 0 "$exe" "${run[@]/1x2/ranks}" --ranks 2 --output-path "$scratch/r2_rank_split.mp4"
cmp -s "$scratch/r2.mp4" "$scratch/r2_rank_split.mp4" || fail "--vae-tiles ranks on 2 ranks differs from 1x2"
# By default the fleet decodes the in-process run's own tiles (here 2 temporal groups x 2 width
# tiles) spread over the ranks: the in-process file on any rank count.
wide=(--prompt "a fox in the snow" --seed 3 --height 64 --width 832 --num-frames 97)
expect_exit 0 "$exe" "${wide[@]}" --output-path "$scratch/wide_local.mp4"
for ranks in 2 3; do
  expect_exit_no_workers 0 "$exe" "${wide[@]}" --ranks "$ranks" --output-path "$scratch/wide_r$ranks.mp4"
  cmp -s "$scratch/wide_local.mp4" "$scratch/wide_r$ranks.mp4" ||
    fail "64x832x97 with the default decode: --ranks $ranks differs from the in-process run"
done
# --quantization fp8 reaches every rank's transformer (each token quantized with its own scale, so a
# shard quantizes as the whole does): the fleet's file is the in-process fp8 run's, and not the bf16's.
expect_exit 0 "$exe" "${run[@]/1x2/1x1}" --quantization fp8 --output-path "$scratch/fp8_local.mp4"
expect_exit_no_workers 0 "$exe" "${run[@]/1x2/1x1}" --quantization fp8 --ranks 2 --output-path "$scratch/fp8_r2.mp4"
cmp -s "$scratch/fp8_local.mp4" "$scratch/fp8_r2.mp4" || fail "--quantization fp8 on 2 ranks differs from in-process"
cmp -s "$scratch/local.mp4" "$scratch/fp8_local.mp4" && fail "--quantization fp8 left the in-process file unchanged"
# Padded video tokens must not change a bit either.
padded=(--prompt "a fox in the snow" --seed 3 --height 64 --width 320 --num-frames 9 --vae-tiles 1x2)
for ranks in 1 3; do
  expect_exit_no_workers 0 "$exe" "${padded[@]}" --ranks "$ranks" --output-path "$scratch/padded_r$ranks.mp4"
done
cmp -s "$scratch/padded_r1.mp4" "$scratch/padded_r3.mp4" || fail "64x320 (padded tokens): --ranks 3 differs from --ranks 1"
finish
