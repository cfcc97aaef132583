#!/usr/bin/env bash
# ltx2-ti2vid on the tiny LTX-2.5 model set of tests/data/golden/pipeline_ti2vid_25 (split layout:
# the 2.5 transformer and duration head of pipeline_distilled_25, the Gemma 4 text-encoder file, the
# conv video VAE, audio VAE and vocoder, pipeline_ti2vid's distilled LoRA and image): the fixture's
# equivalent_cli flags, run from the case folder, give an MP4 of the request's shape (the numbers
# are checked stage by stage by the golden case); the same file on 2 ranks (guidance passes spread);
# --num-frames unset makes the duration head choose the length (17 frames at 8 fps for this prompt,
# as in pipeline_distilled_25_auto), on 2 ranks too (the same file; with stage 2 tiled data parallel,
# whose tiles are cut for the predicted length, a video of that length); the version's default STG
# block is applied.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-ti2vid"
export LTX2_CACHE_DIR="$scratch/cache"
case_dir="$golden/pipeline_ti2vid_25"
prompt="A calm forest with mist, the camera pans slowly over a river at golden hour."
models=(--transformer-path ../pipeline_distilled_25/transformer.safetensors
        --text-encoder-path ../gemma4_tiny/text_encoder.safetensors
        --video-vae-path ../pipeline_distilled/checkpoint.safetensors
        --audio-vae-path ../pipeline_distilled/checkpoint.safetensors
        --duration-head-path ../pipeline_distilled_25/duration_head.safetensors
        --spatial-upsampler-path ../pipeline_distilled/spatial_upsampler.safetensors
        --distilled-lora ../pipeline_ti2vid/distilled_lora.safetensors 1.0)
guidance=(--video-cfg-guidance-scale 3.0 --video-stg-guidance-scale 1.0 --video-rescale-scale 0.7
          --a2v-guidance-scale 3.0 --video-skip-step 0 --video-stg-blocks 1
          --audio-cfg-guidance-scale 7.0 --audio-stg-guidance-scale 1.0 --audio-rescale-scale 0.7
          --v2a-guidance-scale 3.0 --audio-skip-step 0 --audio-stg-blocks 0
          --image ../pipeline_ti2vid/image.png 0 1.0 0)
run=(--prompt "$prompt" --seed 12 --height 64 --width 128 --num-frames 9 --frame-rate 24.0
     --num-inference-steps 3)

cd "$case_dir" || { fail "no case folder $case_dir"; finish; }
expect_exit 0 "$exe" "${models[@]}" "${run[@]}" "${guidance[@]}" --output-path "$scratch/fixture.mp4"
echo "$out" | grep -q "embedded tiny model" && fail "the fixture run used the embedded tiny model"
expect_mp4 "$scratch/fixture.mp4" 9 128 64 24
# 2 worker processes (a step's 4 guidance passes spread over them): the same bytes.
expect_exit_no_workers 0 "$exe" "${models[@]}" "${run[@]}" "${guidance[@]}" --ranks 2 \
  --output-path "$scratch/r2.mp4"
cmp -s "$scratch/fixture.mp4" "$scratch/r2.mp4" || fail "the 2.5 set on 2 ranks differs from the in-process run"

# --num-frames unset: the duration head predicts 2.21 s at 8 fps, 17 frames (the STG blocks named: the
# 2.5 default, block 28, is not in the tiny model).
auto=(--prompt "$prompt" --seed 12 --height 64 --width 128 --frame-rate 8 --num-inference-steps 2
      --video-stg-blocks 1 --audio-stg-blocks 0)
expect_exit 0 "$exe" "${models[@]}" "${auto[@]}" --output-path "$scratch/auto.mp4"
expect_mp4 "$scratch/auto.mp4" 17 128 64 8
expect_exit_no_workers 0 "$exe" "${models[@]}" "${auto[@]}" --ranks 2 --output-path "$scratch/auto_r2.mp4"
cmp -s "$scratch/auto.mp4" "$scratch/auto_r2.mp4" || fail "--num-frames unset on 2 ranks differs from one process"
# TDP's own sigmas and tiles make other numbers than one process; its tiles are cut for the predicted
# length, so the file is the one --num-frames 17 gives.
tdp=(--ranks 2 --stage2-parallel tdp --tdp-tiles 1x2 --tdp-overlap 1)
expect_exit_no_workers 0 "$exe" "${models[@]}" "${auto[@]}" "${tdp[@]}" --output-path "$scratch/auto_tdp.mp4"
expect_mp4 "$scratch/auto_tdp.mp4" 17 128 64 8
expect_exit_no_workers 0 "$exe" "${models[@]}" "${auto[@]}" "${tdp[@]}" --num-frames 17 \
  --output-path "$scratch/tdp17.mp4"
cmp -s "$scratch/auto_tdp.mp4" "$scratch/tdp17.mp4" || fail "TDP with --num-frames unset differs from --num-frames 17"

# The STG blocks left unset take the 2.5 checkpoint's default (block 28, as the reference's
# LTX_2_4_PARAMS), which the 2-block tiny model lacks: one line naming the flag, no output.
o="$scratch/bad.mp4"
check_invalid 1 "--video-stg-blocks: block 28 is not in the model, which has 2 blocks" "${models[@]}" \
  --prompt x --num-frames 9 --height 64 --width 128 --output-path "$o"
finish
