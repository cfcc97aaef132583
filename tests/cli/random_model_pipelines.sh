#!/usr/bin/env bash
# Both generation programs on a full-width one-layer LTX-2 19B set from `ltx2 make-random` (every
# tensor at its published width and name: Gemma 3 12B's 262k-row embedding and 3840-wide layers, the
# 4096-wide transformer block, the real VAE, upsampler, audio VAE, vocoder and the rank-384 LoRA),
# on the CPU in float32: an MP4 of the asked shape from each. About 9 GB on disk and 20 GB of
# memory, so ctest runs it alone (RUN_SERIAL).
source "$(dirname "$0")/lib.bash"
m="$scratch/m"
expect_exit 0 "$LTX2_BIN/ltx2" make-random "$m" --model 19b --layers 1
models=(--gemma-root "$m/gemma-3-12b-it-qat-q4_0-unquantized"
        --spatial-upsampler-path "$m/ltx-2-spatial-upscaler-x2-1.0.safetensors")
small=(--height 64 --width 64 --num-frames 9 --prompt "a calm forest with mist" --log-format json)

expect_exit 0 "$LTX2_BIN/ltx2-distilled" --distilled-checkpoint-path "$m/ltx-2-19b-distilled.safetensors" \
  "${models[@]}" "${small[@]}" --output-path "$scratch/distilled.mp4"
echo "$out" | head -1 | grep -qF '"message":"running on the CPU in this process, float32' ||
  fail "distilled: the first line does not say where the job runs: $(echo "$out" | head -1)"
expect_contains '"event":"timings"'
expect_mp4 "$scratch/distilled.mp4" 9 64 64 24

# The one-layer transformer has block 0 only, so STG skips that one.
expect_exit 0 "$LTX2_BIN/ltx2-ti2vid" --checkpoint-path "$m/ltx-2-19b-distilled.safetensors" \
  --distilled-lora "$m/ltx-2-19b-distilled-lora-384.safetensors" "${models[@]}" "${small[@]}" \
  --num-inference-steps 2 --video-stg-blocks 0 --audio-stg-blocks 0 --output-path "$scratch/ti2vid.mp4"
expect_contains '"event":"timings"'
expect_mp4 "$scratch/ti2vid.mp4" 9 64 64 24
cmp -s "$scratch/distilled.mp4" "$scratch/ti2vid.mp4" && fail "the two pipelines wrote the same file"
finish
