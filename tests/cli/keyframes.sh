#!/usr/bin/env bash
# ltx2-keyframes: on the embedded tiny model with a first and a last keyframe, in-process, through
# the fleet (sequence parallel: the same bytes; stage-2 tiled data parallel: an MP4 of the same
# shape, the same on 4 ranks as on 2 for the same 2 tiles) and through --jobs; on the pipeline_keyframes fixture's files with its flags (its frames
# are checked by golden_check; here the MP4's shape); its mistakes give one line and no output.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-keyframes"
export LTX2_CACHE_DIR="$scratch/cache"
case_dir="$golden/pipeline_keyframes"
small=(--height 64 --width 128 --num-frames 17 --num-inference-steps 2 --image "$case_dir/image.png" 0 1.0
  --image "$case_dir/image_last.png" 16 1.0)

expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/a.mp4" "${small[@]}"
expect_mp4 "$scratch/a.mp4" 17 128 64 24
expect_contains "embedded tiny model"
expect_exit_no_workers 0 "$exe" --prompt "a cat" --output-path "$scratch/r2.mp4" "${small[@]}" --ranks 2
cmp -s "$scratch/a.mp4" "$scratch/r2.mp4" || fail "--ranks 2 differs from the in-process run"
expect_exit_no_workers 0 "$exe" --prompt "a cat" --output-path "$scratch/tdp.mp4" "${small[@]}" --ranks 2 \
  --stage2-parallel tdp --tdp-tiles 1x2 --tdp-overlap 1
expect_mp4 "$scratch/tdp.mp4" 17 128 64 24
# The same 2 tiles on 4 ranks: 2 groups of 2, each tile sequence parallel within its group; the
# 2-rank file.
expect_exit_no_workers 0 "$exe" --prompt "a cat" --output-path "$scratch/tdp4.mp4" "${small[@]}" --ranks 4 \
  --stage2-parallel tdp --tdp-tiles 1x2 --tdp-overlap 1
expect_contains "stage 2: 2 tiles over 2 groups of 2 ranks, each tile sequence parallel within its group"
cmp -s "$scratch/tdp.mp4" "$scratch/tdp4.mp4" || fail "2 tdp tiles on 2 groups of 2 ranks differ from 2 ranks"
printf '%s\n' '{"prompt": "a cat", "output_path": "'"$scratch"'/j1.mp4"}' >"$scratch/jobs.jsonl"
expect_exit 0 "$exe" --jobs "$scratch/jobs.jsonl" "${small[@]}"
cmp -s "$scratch/a.mp4" "$scratch/j1.mp4" || fail "a --jobs line differs from the same flags"

models="$golden/pipeline_ti2vid"
(
  cd "$case_dir" || exit 1
  "$exe" --checkpoint-path "$models/checkpoint.safetensors" --gemma-root "$models/gemma" \
    --spatial-upsampler-path "$models/spatial_upsampler.safetensors" \
    --distilled-lora "$models/distilled_lora.safetensors" 1.0 \
    --prompt 'A red fox trots across a snowy meadow at dawn, its breath visible in the cold air, while distant church bells ring softly.' \
    --output-path "$scratch/fixture.mp4" --seed 42 --height 128 --width 192 --num-frames 9 --frame-rate 24.0 \
    --num-inference-steps 3 --video-stg-blocks 1 --audio-stg-blocks 0 \
    --image image.png 0 1.0 0 --image image_last.png 8 1.0 0 2>&1
) >"$scratch/fixture.log" || fail "the fixture's run failed: $(tail -2 "$scratch/fixture.log")"
grep -q "embedded tiny model" "$scratch/fixture.log" && fail "the fixture run used the tiny model"
expect_mp4 "$scratch/fixture.mp4" 9 192 128 24

o="$scratch/bad.mp4"
check_invalid 1 "--height must be a positive multiple of 64 for the keyframe pipeline, got 96" --prompt x \
  --output-path "$o" --height 96
check_invalid 1 "--distilled-lora $scratch/none.safetensors: no such file" --prompt x --output-path "$o" \
  --distilled-lora "$scratch/none.safetensors"
check_invalid 1 "--distilled-lora is required for the keyframe pipeline" --prompt x --output-path "$o" \
  --checkpoint-path "$models/checkpoint.safetensors" --gemma-root "$models/gemma" \
  --spatial-upsampler-path "$models/spatial_upsampler.safetensors"
# Stage-2 tiles that cannot fit the request are refused before any model loads, not after stage 1.
check_invalid 1 "--tdp-tiles 1x2 --tdp-overlap 5 on 2 ranks: 64x128 pixels make a stage-2 latent grid of 2x4" \
  --prompt x --output-path "$o" --height 64 --width 128 --ranks 2 --stage2-parallel tdp
check_invalid 1 "--image $case_dir/image.png: strength must be in [0, 1]" --prompt x --output-path "$o" \
  --image "$case_dir/image.png" 0 1.5
finish
