#!/usr/bin/env bash
# ltx2-ti2vid-hq: on the embedded tiny model with an image, in-process, through the fleet (the same
# bytes) and through --jobs; on the pipeline_hq fixture's files with its flags (its frames are
# checked by golden_check; here the MP4's shape); --help gives the HQ parameters as the defaults;
# its mistakes give one line and no output.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-ti2vid-hq"
export LTX2_CACHE_DIR="$scratch/cache"
case_dir="$golden/pipeline_hq"
small=(--height 64 --width 128 --num-frames 9 --num-inference-steps 2 --image "$case_dir/image.png" 0 1.0)

expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/a.mp4" "${small[@]}"
expect_mp4 "$scratch/a.mp4" 9 128 64 24
expect_contains "embedded tiny model"
expect_exit_no_workers 0 "$exe" --prompt "a cat" --output-path "$scratch/r2.mp4" "${small[@]}" --ranks 2
cmp -s "$scratch/a.mp4" "$scratch/r2.mp4" || fail "--ranks 2 differs from the in-process run"
# The stage strengths are the request's: a --jobs line may change them, and that changes the video.
printf '%s\n' '{"prompt": "a cat", "output_path": "'"$scratch"'/j1.mp4"}' \
  '{"prompt": "a cat", "output_path": "'"$scratch"'/j2.mp4", "distilled_lora_strength_stage_1": 1.0}' \
  >"$scratch/jobs.jsonl"
expect_exit 0 "$exe" --jobs "$scratch/jobs.jsonl" "${small[@]}"
cmp -s "$scratch/a.mp4" "$scratch/j1.mp4" || fail "a --jobs line differs from the same flags"
cmp -s "$scratch/j1.mp4" "$scratch/j2.mp4" && fail "distilled_lora_strength_stage_1 changed nothing"

expect_exit 0 "$exe" --help
expect_contains "[default: 15 (the reference's HQ parameters)"
expect_contains "--distilled-lora-strength-stage-2"
echo "$out" | grep -A1 -e "--video-rescale-scale" | grep -qF "[default: 0.45]" || fail "--help: video rescale default is not 0.45"
echo "$out" | grep -A1 -e "--height" | grep -qF "[default: 1088" || fail "--help: height default is not 1088"

models="$golden/pipeline_ti2vid"
(
  cd "$case_dir" || exit 1
  "$exe" --checkpoint-path "$models/checkpoint.safetensors" --gemma-root "$models/gemma" \
    --spatial-upsampler-path "$models/spatial_upsampler.safetensors" \
    --distilled-lora "$models/distilled_lora.safetensors" 1.0 \
    --prompt 'A red fox trots across a snowy meadow at dawn, its breath visible in the cold air, while distant church bells ring softly.' \
    --output-path "$scratch/fixture.mp4" --seed 42 --height 128 --width 192 --num-frames 9 --frame-rate 24.0 \
    --num-inference-steps 3 --image image.png 0 1.0 0 2>&1
) >"$scratch/fixture.log" || fail "the fixture's run failed: $(tail -2 "$scratch/fixture.log")"
grep -q "embedded tiny model" "$scratch/fixture.log" && fail "the fixture run used the tiny model"
expect_mp4 "$scratch/fixture.mp4" 9 192 128 24

o="$scratch/bad.mp4"
check_invalid 2 "--distilled-lora-strength-stage-1" --prompt x --output-path "$o" --distilled-lora-strength-stage-1 x
check_invalid 2 "--distilled-lora-strength-stage-2: 'inf' is not a number" --prompt x --output-path "$o" \
  --distilled-lora-strength-stage-2 inf
check_invalid 1 "--height must be a positive multiple of 64 for the HQ pipeline, got 96" --prompt x \
  --output-path "$o" --height 96
check_invalid 1 "--num-inference-steps must be between 2 and 1000" --prompt x --output-path "$o" \
  --num-inference-steps 1
check_invalid 1 "--distilled-lora: the HQ pipeline takes one" --prompt x --output-path "$o" \
  --distilled-lora "$models/distilled_lora.safetensors" --distilled-lora "$models/distilled_lora.safetensors"
finish
