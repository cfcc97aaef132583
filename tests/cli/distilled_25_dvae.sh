#!/usr/bin/env bash
# ltx2-distilled on the tiny LTX-2.5 set whose video VAE is the diffusion decoder
# (tests/data/golden/pipeline_distilled_25_dvae: vae._class_name CausalDiffusionVAE): the program
# picks that decoder from the file's config and writes the video; on 2 CPU ranks the file is the
# same (on CPUs the decoder's plan is one tile, which rank 0 decodes; its tiles spread over ranks
# are tests/unit/parallel_sp/test_distributed_diffusion_decode.cpp's), and --vae-tiles, which does not
# apply to this decoder, says so in one line and changes nothing; a set whose config names the diffusion decoder over the conv decoder's weights is refused
# in one line naming the file and the key, before any work. (The numbers themselves are checked
# stage by stage by the golden case.)
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
case_dir="$golden/pipeline_distilled_25_dvae"
set25="$golden/pipeline_distilled_25"
models=(--transformer-path "$set25/transformer.safetensors"
        --text-encoder-path "$golden/gemma4_tiny/text_encoder.safetensors"
        --audio-vae-path "$golden/pipeline_distilled/checkpoint.safetensors"
        --spatial-upsampler-path "$golden/pipeline_distilled/spatial_upsampler.safetensors")
prompt="A calm forest with mist, the camera pans slowly over a river at golden hour."
run=(--prompt "$prompt" --seed 12 --height 64 --width 128 --num-frames 9)

expect_exit 0 "$exe" "${models[@]}" --video-vae-path "$case_dir/video_vae.safetensors" "${run[@]}" \
  --output-path "$scratch/local.y4m"
v=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=width,height,nb_read_frames \
    -of default=nw=1 "$scratch/local.y4m")
for want in width=128 height=64 nb_read_frames=9; do
  echo "$v" | grep -qx "$want" || fail "local.y4m lacks $want: $(echo $v)"
done
[ -s "$scratch/local.wav" ] || fail "local.wav was not written"

# The same request with the conv VAE set gives another video: the decoder really is the file's.
expect_exit 0 "$exe" "${models[@]}" --video-vae-path "$golden/pipeline_distilled/checkpoint.safetensors" \
  "${run[@]}" --output-path "$scratch/conv.y4m"
cmp -s "$scratch/local.y4m" "$scratch/conv.y4m" && fail "the diffusion decoder's video equals the conv decoder's"

# 2 CPU ranks: the same file.
expect_exit_no_workers 0 "$exe" "${models[@]}" --video-vae-path "$case_dir/video_vae.safetensors" "${run[@]}" \
  --ranks 2 --output-path "$scratch/r2.y4m"
cmp -s "$scratch/local.y4m" "$scratch/r2.y4m" || fail "the diffusion-decoder set on 2 ranks differs from the in-process run"
cmp -s "$scratch/local.wav" "$scratch/r2.wav" || fail "the diffusion-decoder set's audio on 2 ranks differs"
# --vae-tiles (the conv decoder's reference plan) does not apply: one log line, the same file.
expect_exit_no_workers 0 "$exe" "${models[@]}" --video-vae-path "$case_dir/video_vae.safetensors" "${run[@]}" \
  --ranks 2 --vae-tiles 1x2 --output-path "$scratch/r2t.y4m"
expect_contains "--vae-tiles does not apply to the diffusion video decoder (CausalDiffusionVAE)"
cmp -s "$scratch/local.y4m" "$scratch/r2t.y4m" || fail "--vae-tiles changed the diffusion-decoder set's video"

# Config and weights that disagree: one line naming the file and the key, nothing written, in
# process and before a fleet starts.
o="$scratch/bad.y4m"
bad="$case_dir/mismatched_video_vae.safetensors"
msg="$bad: metadata config vae._class_name is 'CausalDiffusionVAE' (the diffusion video decoder) but key 'vae.decoder.conv_in.conv.weight' is the conv decoder's"
check_invalid 1 "$msg" "${models[@]}" --video-vae-path "$bad" "${run[@]}" --output-path "$o"
check_invalid 1 "$msg" "${models[@]}" --video-vae-path "$bad" "${run[@]}" --ranks 2 --output-path "$o"
finish
