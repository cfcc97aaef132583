#!/usr/bin/env bash
# ltx2-distilled on the tiny LTX-2.5 model set of tests/data/golden/pipeline_distilled_25 (split
# layout: the 2.5 transformer, the Gemma 4 text-encoder file, the conv video VAE, audio VAE and
# vocoder, the duration head): the same video in this process and on 2 CPU ranks; --num-frames unset
# makes the duration head choose the length (17 frames for the _auto case's request, as the reference
# chose), on 2 CPU ranks too (rank 0 predicts, the other rank and the driver take its count: the same
# files); without a head --num-frames is required; every bad value one line naming the flag. (The
# numbers themselves are checked stage by stage by the golden cases.)
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
set25="$golden/pipeline_distilled_25"
models=(--transformer-path "$set25/transformer.safetensors"
        --text-encoder-path "$golden/gemma4_tiny/text_encoder.safetensors"
        --video-vae-path "$golden/pipeline_distilled/checkpoint.safetensors"
        --audio-vae-path "$golden/pipeline_distilled/checkpoint.safetensors"
        --spatial-upsampler-path "$golden/pipeline_distilled/spatial_upsampler.safetensors")
head=(--duration-head-path "$set25/duration_head.safetensors")
prompt="A calm forest with mist, the camera pans slowly over a river at golden hour."

# --num-frames given: the same file in this process and on 2 CPU ranks (sequence parallel).
run=(--prompt "$prompt" --seed 10 --height 128 --width 192 --num-frames 9)
expect_exit 0 "$exe" "${models[@]}" "${head[@]}" "${run[@]}" --output-path "$scratch/local.y4m"
expect_exit_no_workers 0 "$exe" "${models[@]}" "${head[@]}" "${run[@]}" --ranks 2 --output-path "$scratch/r2.y4m"
cmp -s "$scratch/local.y4m" "$scratch/r2.y4m" || fail "the 2.5 set on 2 ranks differs from the in-process run"
cmp -s "$scratch/local.wav" "$scratch/r2.wav" || fail "the 2.5 set's audio on 2 ranks differs"
# No head is needed when the length is given.
expect_exit 0 "$exe" "${models[@]}" "${run[@]}" --output-path "$scratch/nohead.y4m"
cmp -s "$scratch/local.y4m" "$scratch/nohead.y4m" || fail "the duration head changed a run with --num-frames"

# --num-frames unset: the head predicts 2.21 s at 8 fps, 17 frames (pipeline_distilled_25_auto).
auto=(--prompt "$prompt" --seed 11 --height 64 --width 128 --frame-rate 8)
expect_exit 0 "$exe" "${models[@]}" "${head[@]}" "${auto[@]}" --output-path "$scratch/auto.y4m"
v=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=width,height,nb_read_frames \
    -of default=nw=1 "$scratch/auto.y4m")
for want in width=128 height=64 nb_read_frames=17; do
  echo "$v" | grep -qx "$want" || fail "auto.y4m lacks $want: $(echo $v)"
done
# From a --jobs line too (the line leaves num_frames unset, as the command line does).
echo '{"prompt": "'"$prompt"'", "output_path": "'"$scratch"'/auto_job.y4m"}' > "$scratch/auto.jsonl"
expect_exit 0 "$exe" "${models[@]}" "${head[@]}" --jobs "$scratch/auto.jsonl" --seed 11 --height 64 --width 128 \
  --frame-rate 8
cmp -s "$scratch/auto.y4m" "$scratch/auto_job.y4m" || fail "--num-frames unset from a --jobs line differs"
# On 2 worker processes: rank 0's prediction reaches the other rank and the driver, so the files are
# the in-process run's, from the command line and from a --jobs line.
expect_exit_no_workers 0 "$exe" "${models[@]}" "${head[@]}" "${auto[@]}" --ranks 2 \
  --output-path "$scratch/auto_r2.y4m"
cmp -s "$scratch/auto.y4m" "$scratch/auto_r2.y4m" || fail "--num-frames unset on 2 ranks differs from one process"
cmp -s "$scratch/auto.wav" "$scratch/auto_r2.wav" || fail "--num-frames unset on 2 ranks: the audio differs"
echo '{"prompt": "'"$prompt"'", "output_path": "'"$scratch"'/auto_job_r2.y4m"}' > "$scratch/auto_r2.jsonl"
expect_exit_no_workers 0 "$exe" "${models[@]}" "${head[@]}" --jobs "$scratch/auto_r2.jsonl" --seed 11 \
  --height 64 --width 128 --frame-rate 8 --ranks 2
cmp -s "$scratch/auto.y4m" "$scratch/auto_job_r2.y4m" || fail "--num-frames unset from a --jobs line on 2 ranks differs"

# Mistakes: one line naming the flag, no output, before any work.
o="$scratch/bad.y4m"
check_invalid 1 "--num-frames is required: the model has no duration head" "${models[@]}" "${auto[@]}" \
  --output-path "$o"
check_invalid 1 "--num-frames is required: the model has no duration head" --prompt x --output-path "$o" \
  --distilled-checkpoint-path "$golden/pipeline_distilled/checkpoint.safetensors" \
  --gemma-root "$golden/pipeline_distilled/gemma" \
  --spatial-upsampler-path "$golden/pipeline_distilled/spatial_upsampler.safetensors"
check_invalid 1 "--enhance-prompt: the text encoder is LTX-2.5's Gemma 4 (gemma4_unified)" "${models[@]}" \
  "${head[@]}" "${run[@]}" --enhance-prompt --output-path "$o"
check_invalid 2 "--num-frames must be 8k+1 (1, 9, 17, ..., 121, ...), got 0" "${models[@]}" "${head[@]}" \
  "${auto[@]}" --num-frames 0 --output-path "$o"
check_invalid 1 "--duration-head-path $scratch/none.safetensors: no such file" "${models[@]}" "${auto[@]}" \
  --duration-head-path "$scratch/none.safetensors" --output-path "$o"
check_invalid 1 "--duration-head-path $set25/transformer.safetensors: holds no duration head" "${models[@]}" \
  "${auto[@]}" --duration-head-path "$set25/transformer.safetensors" --output-path "$o"
check_invalid 1 "cannot be mixed" --prompt x --output-path "$o" "${head[@]}" \
  --distilled-checkpoint-path "$golden/pipeline_distilled/checkpoint.safetensors"
echo '{"prompt": "x", "output_path": "'"$o"'", "num_frames": 0}' > "$scratch/zero.jsonl"
expect_exit 1 "$exe" "${models[@]}" "${head[@]}" --jobs "$scratch/zero.jsonl"
expect_contains "line 1: --num-frames must be 8k+1"
expect_no_output "$o"
finish
