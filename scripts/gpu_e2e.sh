#!/usr/bin/env bash
# The whole job at full size on a GPU machine, with random-weight checkpoints in the published
# layouts (`ltx2 make-random`), as docs/performance.md "End to end" reports it.
#
# Where the files go (the H200 machines have a 64 GB disk, 128 GB of RAM and a 128 GB tmpfs on
# /dev/shm; a 19B set is 75 GB): the monolith checkpoint and the upsampler (44 GB) in RAM-backed
# /dev/shm, Gemma and the distilled LoRA (31 GB) on disk under $LTX2_E2E_DISK (default /tmp), so
# both fit and the page cache still holds what is on disk.
#
# Usage: scripts/gpu_e2e.sh STEP... [-- extra flags for the programs]
#   make        write the 19B set (skipped when it is there)
#   distilled   ltx2 bench pipeline, distilled, 1024x1536x121 (cold + warm load, 3 jobs) and 512x768x121
#   ti2vid      ltx2 bench pipeline, ti2vid (guided stage 1, distilled LoRA), both sizes
#   jobs        ltx2-distilled --jobs of 3 prompts at 1024x1536x121 within --gpu-memory 80 (H100-class)
#   tight       ti2vid within --gpu-memory 80, distilled within 70 (Gemma then loaded per job)
#   gpus        ltx2-distilled and ltx2-ti2vid at 1024x1536x121 on 1, 2, 4, 8 GPUs (as many as there
#               are; a fleet each, its timings line in the log)
# Results (logs and JSON) go to $LTX2_E2E_OUT (default ./e2e-results). Needs build/bin from
# scripts/gpu_build.sh. Output files are .y4m (+ .wav): the GPU machines have no FFmpeg.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
model=${LTX2_E2E_MODEL:-19b}
shm=${LTX2_E2E_SHM:-/dev/shm/ltx2-$model}
disk=${LTX2_E2E_DISK:-/tmp}/ltx2-$model
out=${LTX2_E2E_OUT:-e2e-results}
mkdir -p "$out" "$shm" "$disk"

steps=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do steps+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
extra=("$@")

if [ "$model" = 19b ]; then
  ckpt=$shm/ltx-2-19b-distilled.safetensors
  upsampler=$shm/ltx-2-spatial-upscaler-x2-1.0.safetensors
  lora=$disk/ltx-2-19b-distilled-lora-384.safetensors
else
  ckpt=$shm/ltx-2.3-22b-distilled.safetensors
  upsampler=$shm/ltx-2.3-spatial-upscaler-x2-1.0.safetensors
  lora=$disk/ltx-2.3-22b-distilled-lora-384.safetensors
fi
gemma=$disk/gemma-3-12b-it-qat-q4_0-unquantized
models=(--checkpoint-path "$ckpt" --gemma-root "$gemma" --spatial-upsampler-path "$upsampler")

source scripts/step.bash

for s in "${steps[@]}"; do
  case "$s" in
    make)
      [ -f "$ckpt" ] || step make-shm "$bin/ltx2" make-random "$shm" --model "$model" --only checkpoint,upsampler
      [ -f "$gemma/model.safetensors.index.json" ] && [ -f "$lora" ] ||
        step make-disk "$bin/ltx2" make-random "$disk" --model "$model" --only gemma,lora
      ;;
    distilled)
      step distilled-full "$bin/ltx2" bench pipeline --pipeline distilled "${models[@]}" --height 1024 --width 1536 \
        --num-frames 121 --repeat 3 --cold --output y4m --json "$out/distilled-full.json" "${extra[@]}"
      step distilled-half "$bin/ltx2" bench pipeline --pipeline distilled "${models[@]}" --height 512 --width 768 \
        --num-frames 121 --repeat 2 --output y4m --json "$out/distilled-half.json" "${extra[@]}"
      ;;
    ti2vid)
      for size in "1024 1536 full" "512 768 half"; do
        set -- $size
        step "ti2vid-$3" "$bin/ltx2" bench pipeline --pipeline ti2vid "${models[@]}" --distilled-lora "$lora" \
          --height "$1" --width "$2" --num-frames 121 --num-inference-steps 30 --repeat 1 --output y4m \
          --json "$out/ti2vid-$3.json" "${extra[@]}"
      done
      ;;
    tight)
      # As an 80 GiB card (H100-class) would run them: ti2vid (its stage 2 holds the LoRA-fused
      # copies too) and, at 70 GiB, distilled with Gemma loaded per job.
      step ti2vid-80gib "$bin/ltx2" bench pipeline --pipeline ti2vid "${models[@]}" --distilled-lora "$lora" \
        --height 1024 --width 1536 --num-frames 121 --num-inference-steps 30 --repeat 1 --output y4m --gpu-memory 80 \
        --json "$out/ti2vid-80gib.json" "${extra[@]}"
      step distilled-70gib "$bin/ltx2" bench pipeline --pipeline distilled "${models[@]}" --height 1024 --width 1536 \
        --num-frames 121 --repeat 2 --output y4m --gpu-memory 70 --json "$out/distilled-70gib.json" "${extra[@]}"
      ;;
    jobs)
      printf '%s\n' "{\"prompt\": \"a red fox in fresh snow\", \"output_path\": \"$disk/j1.y4m\", \"seed\": 1}" \
        "{\"prompt\": \"waves on a rocky shore at dusk\", \"output_path\": \"$disk/j2.y4m\", \"seed\": 2}" \
        "{\"prompt\": \"a street market in the rain\", \"output_path\": \"$disk/j3.y4m\", \"seed\": 3}" >"$out/jobs.jsonl"
      step jobs-80gib "$bin/ltx2-distilled" --distilled-checkpoint-path "$ckpt" --gemma-root "$gemma" \
        --spatial-upsampler-path "$upsampler" --jobs "$out/jobs.jsonl" --height 1024 --width 1536 --num-frames 121 \
        --gpu-memory 80 "${extra[@]}"
      ls -la "$disk"/j*.y4m "$disk"/j*.wav >>"$out/jobs-80gib.log" 2>&1
      rm -f "$disk"/j*.y4m "$disk"/j*.wav
      ;;
    gpus)
      all=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)
      for w in 1 2 4 8; do
        [ "$w" -le "$(echo "$all" | tr ',' '\n' | wc -l)" ] || break
        list=$(echo "$all" | cut -d, -f1-"$w")
        step "distilled-gpus$w" "$bin/ltx2-distilled" --distilled-checkpoint-path "$ckpt" --gemma-root "$gemma" \
          --spatial-upsampler-path "$upsampler" --prompt "a red fox in fresh snow" --height 1024 --width 1536 \
          --num-frames 121 --gpus "$list" --output-path "$disk/gpus$w.y4m" "${extra[@]}"
        step "ti2vid-gpus$w" "$bin/ltx2-ti2vid" "${models[@]}" --distilled-lora "$lora" 1.0 \
          --prompt "a red fox in fresh snow" --height 1024 --width 1536 --num-frames 121 --num-inference-steps 30 \
          --gpus "$list" --output-path "$disk/gpus$w-ti2vid.y4m" "${extra[@]}"
        rm -f "$disk"/gpus"$w"*.y4m "$disk"/gpus"$w"*.wav
      done
      ;;
    *) echo "gpu_e2e.sh: unknown step '$s' (make, distilled, ti2vid, jobs, tight, gpus)"; exit 2 ;;
  esac
done
