#!/usr/bin/env bash
# `ltx2 make-tiny DIR` writes the complete tiny model set, byte-identical on every run, in layouts
# that `ltx2 inspect` recognises component by component; usage and I/O errors exit 2 / 1.
source "$(dirname "$0")/lib.bash"
ltx2="$LTX2_BIN/ltx2"

expect_exit 0 "$ltx2" make-tiny "$scratch/a"
for f in checkpoint.safetensors spatial_upsampler.safetensors distilled_lora.safetensors \
         gemma/config.json gemma/model.safetensors gemma/tokenizer.model; do
  expect_contains "$f"
  [ -s "$scratch/a/$f" ] || fail "make-tiny did not write $f"
done
expect_exit 0 "$ltx2" make-tiny "$scratch/b"
diff -r "$scratch/a" "$scratch/b" >/dev/null || fail "two make-tiny runs wrote different files"

expect_exit 0 "$ltx2" inspect "$scratch/a/checkpoint.safetensors"
for c in transformer text_connector video_vae_decoder video_vae_encoder audio_vae_decoder vocoder; do
  expect_contains "$c"
done
echo "$out" | grep -q "other" && fail "the tiny checkpoint has unrecognised tensors"
expect_exit 0 "$ltx2" inspect "$scratch/a/spatial_upsampler.safetensors"
expect_contains "latent_upsampler"
expect_exit 0 "$ltx2" inspect "$scratch/a/distilled_lora.safetensors"
expect_contains "lora"
expect_exit 0 "$ltx2" inspect "$scratch/a/gemma"
expect_contains "gemma_text_model"

expect_exit 2 "$ltx2" make-tiny
printf 'x' > "$scratch/file"
expect_exit 1 "$ltx2" make-tiny "$scratch/file/set"
expect_one_line
expect_contains "$scratch/file"
finish
