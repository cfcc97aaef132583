#!/usr/bin/env bash
# ltx2-one-stage: on the embedded tiny model with two images (frame 0 replaced, a later frame a
# keyframe) at a size only a one-stage pipeline takes (multiples of 32), in-process, through the fleet
# (the same bytes) and through --jobs; on the pipeline_one_stage fixture's files with its flags (its
# frames are checked by golden_check; here the MP4's shape); flags of the two-stage pipelines are
# not this program's, and its mistakes give one line and no output.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-one-stage"
export LTX2_CACHE_DIR="$scratch/cache"
case_dir="$golden/pipeline_one_stage"
small=(--height 96 --width 160 --num-frames 17 --num-inference-steps 2 --image "$case_dir/image.png" 0 1.0
  --image "$case_dir/image_last.png" 16 0.5)

expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/a.mp4" "${small[@]}"
expect_mp4 "$scratch/a.mp4" 17 160 96 24
expect_contains "embedded tiny model"
expect_contains "timings: text encode"
expect_exit_no_workers 0 "$exe" --prompt "a cat" --output-path "$scratch/r2.mp4" "${small[@]}" --ranks 2
cmp -s "$scratch/a.mp4" "$scratch/r2.mp4" || fail "--ranks 2 differs from the in-process run"
printf '%s\n' '{"prompt": "a cat", "output_path": "'"$scratch"'/j1.mp4"}' \
  '{"prompt": "a dog", "output_path": "'"$scratch"'/j2.wav", "height": 64, "num_inference_steps": 2}' >"$scratch/jobs.jsonl"
expect_exit 0 "$exe" --jobs "$scratch/jobs.jsonl" "${small[@]}"
cmp -s "$scratch/a.mp4" "$scratch/j1.mp4" || fail "a --jobs line differs from the same flags"
[[ -s "$scratch/j2.wav" ]] || fail "the second --jobs line wrote no .wav"

models="$golden/pipeline_ti2vid"
(
  cd "$case_dir" || exit 1
  "$exe" --checkpoint-path "$models/checkpoint.safetensors" --gemma-root "$models/gemma" \
    --prompt 'A red fox trots across a snowy meadow at dawn, its breath visible in the cold air, while distant church bells ring softly.' \
    --output-path "$scratch/fixture.mp4" --seed 42 --height 128 --width 192 --num-frames 9 --frame-rate 24.0 \
    --num-inference-steps 3 --video-stg-blocks 1 --audio-stg-blocks 0 \
    --image image.png 0 1.0 0 --image image_last.png 8 0.5 0 2>&1
) >"$scratch/fixture.log" || fail "the fixture's run failed: $(tail -2 "$scratch/fixture.log")"
grep -q "embedded tiny model" "$scratch/fixture.log" && fail "the fixture run used the tiny model"
expect_mp4 "$scratch/fixture.mp4" 9 192 128 24

o="$scratch/bad.mp4"
check_invalid 1 "--height must be a multiple of 32 of at least 64 for the one-stage pipeline, got 80" --prompt x \
  --output-path "$o" --height 80
check_invalid 2 "--distilled-lora" --prompt x --output-path "$o" --distilled-lora "$models/distilled_lora.safetensors"
check_invalid 2 "--spatial-upsampler-path" --prompt x --output-path "$o" \
  --spatial-upsampler-path "$models/spatial_upsampler.safetensors"
check_invalid 2 "--stage2-parallel" --prompt x --output-path "$o" --stage2-parallel tdp
check_invalid 1 "--max-batch-size must be between 1 and 4" --prompt x --output-path "$o" --max-batch-size 5
check_invalid 1 "--image $case_dir/image.png: frame 9 is outside" --prompt x --output-path "$o" \
  --image "$case_dir/image.png" 9 1.0
finish
