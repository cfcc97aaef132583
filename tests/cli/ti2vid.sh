#!/usr/bin/env bash
# ltx2-ti2vid: on the embedded tiny model with an image condition, and on the pipeline_ti2vid
# fixture's files with the fixture's equivalent_cli flags (its frames are checked by golden_check;
# here only the MP4's shape); the same seed twice gives the same bytes; two-stage-only mistakes
# give one line and no output.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-ti2vid"
export LTX2_CACHE_DIR="$scratch/cache"
case_dir="$golden/pipeline_ti2vid"
small=(--height 64 --width 64 --num-frames 9 --num-inference-steps 2 --image "$case_dir/image.png" 0 1.0)

expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/a.mp4" "${small[@]}"
expect_mp4 "$scratch/a.mp4" 9 64 64 24
expect_contains "embedded tiny model"
expect_contains "timings: text encode"
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/b.mp4" "${small[@]}" --log-format json
cmp -s "$scratch/a.mp4" "$scratch/b.mp4" || fail "the same seed gave different MP4 files"
# --max-batch-size: the guidance passes batched per transformer call give the same bytes (every op
# of the CPU path is per sample); on worker processes too.
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/batched.mp4" "${small[@]}" --max-batch-size 4
cmp -s "$scratch/a.mp4" "$scratch/batched.mp4" || fail "--max-batch-size 4 changed the MP4"
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/batched2.mp4" "${small[@]}" --max-batch-size 3 --ranks 2
expect_mp4 "$scratch/batched2.mp4" 9 64 64 24
# Worker processes: a step's 4 guidance passes spread over 2 ranks (guidance-branch parallel, the
# default), or all of them sequence parallel; both give the one-process bytes.
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/branches.mp4" "${small[@]}" --ranks 2
expect_contains "guidance passes: 4 a step over 2 ranks, 2 each"
cmp -s "$scratch/a.mp4" "$scratch/branches.mp4" || fail "guidance passes on 2 ranks changed the MP4"
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/sp2.mp4" "${small[@]}" --ranks 2 --stage1-parallel sp
cmp -s "$scratch/a.mp4" "$scratch/sp2.mp4" || fail "--stage1-parallel sp on 2 ranks changed the MP4"
# 2 passes a step (no STG, no modality guidance) on 4 ranks: 2 groups of 2 ranks, each sequence
# parallel over its own communicator; the one-process bytes.
cfg_only=(--video-stg-guidance-scale 0 --audio-stg-guidance-scale 0 --a2v-guidance-scale 1 --v2a-guidance-scale 1)
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/cfg.mp4" "${small[@]}" "${cfg_only[@]}"
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/cfg4.mp4" "${small[@]}" "${cfg_only[@]}" --ranks 4
expect_contains "guidance passes: 2 a step over 2 groups of 2 ranks, 1 each, sequence parallel within a group"
cmp -s "$scratch/cfg.mp4" "$scratch/cfg4.mp4" || fail "2 guidance passes over 2 groups of 2 ranks changed the MP4"

(
  cd "$case_dir" || exit 1
  "$exe" --checkpoint-path checkpoint.safetensors --gemma-root gemma \
    --spatial-upsampler-path spatial_upsampler.safetensors --distilled-lora distilled_lora.safetensors 1.0 \
    --prompt 'A red fox trots across a snowy meadow at dawn, its breath visible in the cold air, while distant church bells ring softly.' \
    --output-path "$scratch/fixture.mp4" --seed 42 --height 128 --width 192 --num-frames 9 --frame-rate 24.0 \
    --num-inference-steps 3 --video-cfg-guidance-scale 3.0 --video-stg-guidance-scale 1.0 \
    --video-rescale-scale 0.7 --video-stg-blocks 1 --a2v-guidance-scale 3.0 --video-skip-step 0 \
    --audio-cfg-guidance-scale 7.0 --audio-stg-guidance-scale 1.0 --audio-rescale-scale 0.7 \
    --audio-stg-blocks 0 --v2a-guidance-scale 3.0 --audio-skip-step 0 --image image.png 0 1.0 0 2>&1
) >"$scratch/fixture.log" || fail "the fixture's equivalent_cli run failed: $(tail -2 "$scratch/fixture.log")"
grep -q "embedded tiny model" "$scratch/fixture.log" && fail "the fixture run used the tiny model"
expect_mp4 "$scratch/fixture.mp4" 9 192 128 24

o="$scratch/bad.mp4"
ckpt="$case_dir/checkpoint.safetensors"
check_invalid 1 "--distilled-lora $scratch/none.safetensors: no such file" --prompt x --output-path "$o" \
  --distilled-lora "$scratch/none.safetensors"
check_invalid 2 "--distilled-lora $case_dir/distilled_lora.safetensors STRENGTH: 'x' is not a number" --prompt x --output-path "$o" \
  --distilled-lora "$case_dir/distilled_lora.safetensors" x
check_invalid 1 "--video-stg-blocks: block 5 is not in the model" --prompt x --output-path "$o" --video-stg-blocks 5
check_invalid 1 "--video-cfg-guidance-scale must be a finite number >= 0" --prompt x --output-path "$o" \
  --video-cfg-guidance-scale -1
check_invalid 1 "--max-batch-size must be between 1 and 4" --prompt x --output-path "$o" --max-batch-size 0
check_invalid 1 "--num-inference-steps must be between 2 and 1000" --prompt x --output-path "$o" --num-inference-steps 0
check_invalid 1 "--image $case_dir/image.png: frame 9 is outside" --prompt x --output-path "$o" \
  --image "$case_dir/image.png" 9 1.0
check_invalid 1 "--checkpoint-path (monolith) cannot be mixed" --prompt x --output-path "$o" \
  --checkpoint-path "$ckpt" --audio-vae-path "$ckpt"
check_invalid 1 "--gemma-root $scratch/none: no such Gemma folder or text-encoder file" --prompt x --output-path "$o" --checkpoint-path "$ckpt" \
  --gemma-root "$scratch/none" --spatial-upsampler-path "$ckpt" --distilled-lora "$ckpt"
check_invalid 2 "--stage2-parallel" --prompt x --output-path "$o" --stage2-parallel both
check_invalid 2 "--stage1-parallel must be auto or sp" --prompt x --output-path "$o" --stage1-parallel both
# Defaults by the checkpoint's version: the fixture's checkpoint declares none, so it gets LTX-2.0's
# (STG on block 29, which its 2 blocks do not have); the flag given, or an empty list, overrides it.
fixture_models=(--checkpoint-path "$ckpt" --gemma-root "$case_dir/gemma" --spatial-upsampler-path \
  "$case_dir/spatial_upsampler.safetensors" --distilled-lora "$case_dir/distilled_lora.safetensors")
check_invalid 1 "--video-stg-blocks: block 29 is not in the model, which has 2 blocks" --prompt x --output-path "$o" \
  "${fixture_models[@]}"
check_invalid 1 "--audio-stg-blocks: block 29 is not in the model" --prompt x --output-path "$o" \
  "${fixture_models[@]}" --video-stg-blocks
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/no_stg.y4m" --height 64 --width 64 --num-frames 9 \
  --num-inference-steps 2 --video-stg-blocks --audio-stg-blocks
# --enhance-prompt with --image: a Gemma 3 with its vision tower (enhance_prompt_image's folder, its text
# weights this fixture's Gemma) is shown the image; the rewrite is logged, and is what is encoded; the
# same through 2 worker processes (rank 0 rewrites) and from a --jobs line.
vision=(--checkpoint-path "$ckpt" --gemma-root "$golden/enhance_prompt_image/gemma" --spatial-upsampler-path
  "$case_dir/spatial_upsampler.safetensors" --distilled-lora "$case_dir/distilled_lora.safetensors" 1.0
  --height 64 --width 64 --num-frames 9 --num-inference-steps 2 --video-stg-blocks 1 --audio-stg-blocks 0)
expect_exit 0 "$exe" "${vision[@]}" --prompt "a cat" --output-path "$scratch/plain_i2v.y4m" \
  --image "$case_dir/image.png" 0 1.0
expect_exit 0 "$exe" "${vision[@]}" --prompt "a cat" --output-path "$scratch/enh_i2v.y4m" \
  --image "$case_dir/image.png" 0 1.0 --enhance-prompt
expect_contains "enhanced prompt ("
cmp -s "$scratch/plain_i2v.y4m" "$scratch/enh_i2v.y4m" && fail "--enhance-prompt --image left the frames unchanged"
expect_exit 0 "$exe" "${vision[@]}" --prompt "a cat" --output-path "$scratch/enh_i2v_r2.y4m" \
  --image "$case_dir/image.png" 0 1.0 --enhance-prompt --ranks 2
cmp -s "$scratch/enh_i2v.y4m" "$scratch/enh_i2v_r2.y4m" || fail "--enhance-prompt --image through 2 ranks changed the frames"
echo '{"prompt": "a cat", "output_path": "'"$scratch"'/enh_i2v_jobs.y4m", "enhance_prompt": true,
  "images": [["'"$case_dir"'/image.png", 0, 1.0]]}' | tr -d '\n' > "$scratch/enh_i2v.jsonl"
expect_exit 0 "$exe" "${vision[@]}" --jobs "$scratch/enh_i2v.jsonl"
cmp -s "$scratch/enh_i2v.y4m" "$scratch/enh_i2v_jobs.y4m" || fail "--enhance-prompt --image from a --jobs line changed the frames"
# --distilled-lora is repeatable: a second one is fused on top of the first (the same file at 0.5
# after 1.0 here), which changes the video.
lora="$case_dir/distilled_lora.safetensors"
fixture_small=(--checkpoint-path "$ckpt" --gemma-root "$case_dir/gemma" --spatial-upsampler-path
  "$case_dir/spatial_upsampler.safetensors" --prompt "a cat" --height 64 --width 64 --num-frames 9
  --num-inference-steps 2 --video-stg-blocks 1 --audio-stg-blocks 0)
expect_exit 0 "$exe" "${fixture_small[@]}" --output-path "$scratch/one_lora.y4m" --distilled-lora "$lora" 1.0
expect_exit 0 "$exe" "${fixture_small[@]}" --output-path "$scratch/two_loras.y4m" --distilled-lora "$lora" 1.0 \
  --distilled-lora "$lora" 0.5
[[ -s "$scratch/two_loras.y4m" ]] || fail "two --distilled-lora wrote nothing"
cmp -s "$scratch/one_lora.y4m" "$scratch/two_loras.y4m" && fail "a second --distilled-lora changed nothing"
finish
