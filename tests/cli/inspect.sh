#!/usr/bin/env bash
# `ltx2 inspect` names the right component (and shows its config) for every golden weights file,
# and refuses broken files with one clear line.
source "$(dirname "$0")/lib.bash"
ltx2="$LTX2_BIN/ltx2"

declare -A want=(
  [audio_vae_decoder]=audio_vae_decoder [connector_19b]=text_connector [connector_22b]=text_connector
  [gemma3_tiny]=gemma_text_model [latent_upsampler]=latent_upsampler
  [latent_upsampler_rational]=latent_upsampler [video_vae_decoder]=video_vae_decoder
  [video_vae_decoder_tc]=video_vae_decoder [video_vae_encoder]=video_vae_encoder
  [video_vae_tiled_decode]=video_vae_decoder [vocoder]=vocoder [vocoder_bwe]=vocoder
  [duration_head]=duration_head [diffusion_video_decoder]=video_vae_decoder
)
for f in "$golden"/*/weights.safetensors; do
  case_name=$(basename "$(dirname "$f")")
  component=${want[$case_name]:-transformer}
  expect_exit 0 "$ltx2" inspect --json "$f"
  expect_contains "\"component\": \"$component\""
  expect_contains "\"config\""
  echo "$out" | grep -q '"component": "other"' && fail "$case_name: unrecognised tensors"
  echo "$out" | grep -q '"component": "lora"' && fail "$case_name: tensors taken for a LoRA"
done

# A prequantized FP8 file: its quantized linears and their scales.
expect_exit 0 "$ltx2" inspect "$golden/transformer_19b_fp8/weights.safetensors"
expect_contains "quantized 56 tensors stored as F8_E4M3 with a scale"
expect_exit 0 "$ltx2" inspect --json "$golden/transformer_19b_fp8/weights.safetensors"
expect_contains '"tensor": "model.diffusion_model.transformer_blocks.0.attn1.to_q.weight"'
expect_contains '"weight_scale"'
expect_contains '"input_scale"'

# The monolith checkpoint of the pipeline cases holds every component but Gemma and the upsampler.
expect_exit 0 "$ltx2" inspect "$golden/pipeline_distilled/checkpoint.safetensors"
for c in transformer text_connector video_vae_decoder video_vae_encoder audio_vae_decoder vocoder; do
  expect_contains "$c"
done
expect_exit 0 "$ltx2" inspect "$golden/pipeline_distilled/gemma"
expect_contains "gemma_text_model"
expect_exit 0 "$ltx2" inspect "$golden/pipeline_ti2vid/distilled_lora.safetensors"
expect_contains "lora"

# Broken files: one line, non-zero exit, the file named.
head -c 100 "$golden/vocoder/weights.safetensors" > "$scratch/truncated.safetensors"
expect_exit 1 "$ltx2" inspect "$scratch/truncated.safetensors"
expect_one_line
expect_contains "truncated.safetensors"
printf 'garbage' > "$scratch/tiny.safetensors"
expect_exit 1 "$ltx2" inspect "$scratch/tiny.safetensors"
expect_one_line
expect_exit 2 "$ltx2" inspect
expect_exit 1 "$ltx2" inspect "$scratch/absent.safetensors"
finish
