#!/usr/bin/env bash
# ltx2-distilled's output kinds on the embedded tiny model: a .wav alone (no video decoded), an MP4
# or .y4m without audio (--no-audio, no audio decoded), a PNG sequence with its audio.wav; the same
# pictures and sound as the full clip; in process, on a fleet and through --jobs; a sequence's
# folder replaced whole but never one holding other files; one line naming the flag for every
# bad value.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
run=(--prompt "a cat" --seed 5 --height 64 --width 64 --num-frames 9)

# expect_wav FILE: 16-bit PCM stereo at the tiny vocoder's 24 kHz, as long as the 9 frames at 24 fps.
expect_wav() {
  local a
  a=$(ffprobe -v error -show_entries stream=codec_name,channels,sample_rate,duration -of default=nw=1 "$1")
  for want in codec_name=pcm_s16le channels=2 sample_rate=24000; do
    echo "$a" | grep -qx "$want" || fail "$1 lacks $want: $(echo $a)"
  done
  awk -v d="$(echo "$a" | sed -n 's/^duration=//p')" 'BEGIN { e = d - 9 / 24; exit !(e < 0.1 && e > -0.1) }' ||
    fail "$1 does not last 9/24 s: $(echo $a)"
}

# The whole clip first, as the reference to compare with.
expect_exit 0 "$exe" "${run[@]}" --output-path "$scratch/full.y4m"
expect_wav "$scratch/full.wav"

# A .wav alone: the clip's sound exactly, and no video decoded (no decode progress or phase).
expect_exit 0 "$exe" "${run[@]}" --output-path "$scratch/sound.wav" --log-format json
expect_wav "$scratch/sound.wav"
cmp -s "$scratch/full.wav" "$scratch/sound.wav" || fail "sound.wav differs from the full clip's audio"
echo "$out" | grep -qF '"stage":"decode"' && fail "a .wav output decoded the video"
echo "$out" | grep -qF '"decode":' && fail "a .wav output has a decode phase"
expect_contains '"event":"output"'
[ "$(ls "$scratch" | grep -c '^sound')" -eq 1 ] || fail "sound.wav came with other files: $(ls "$scratch")"

# --no-audio: the same frames, no audio file or stream.
expect_exit 0 "$exe" "${run[@]}" --output-path "$scratch/quiet.y4m" --no-audio
cmp -s "$scratch/full.y4m" "$scratch/quiet.y4m" || fail "quiet.y4m differs from the full clip's frames"
[ -e "$scratch/quiet.wav" ] && fail "--no-audio wrote quiet.wav"
expect_exit 0 "$exe" "${run[@]}" --output-path "$scratch/quiet.mp4" --no-audio
s=$(ffprobe -v error -show_entries stream=codec_type,nb_frames,width,height -of default=nw=1 "$scratch/quiet.mp4")
[ "$(echo "$s" | grep -c '^codec_type=')" -eq 1 ] && echo "$s" | grep -qx codec_type=video &&
  echo "$s" | grep -qx nb_frames=9 && echo "$s" | grep -qx width=64 || fail "quiet.mp4: $(echo $s)"

# A PNG sequence: 9 RGB frames numbered from 0, the clip's pictures (the .y4m's up to its
# BT.709 limited-range rounding: ~51 dB measured; another matrix gives ~32), and the clip's sound as
# audio.wav.
expect_exit 0 "$exe" "${run[@]}" --output-path "$scratch/seq/frame_%03d.png"
want=$(printf 'frame_%03d.png\n' $(seq 0 8); echo audio.wav)
[ "$(ls "$scratch/seq" | sort)" = "$(echo "$want" | sort)" ] || fail "seq holds: $(ls "$scratch/seq")"
p=$(ffprobe -v error -show_entries stream=codec_name,width,height,pix_fmt -of default=nw=1 "$scratch/seq/frame_008.png")
for want in codec_name=png width=64 height=64 pix_fmt=rgb24; do
  echo "$p" | grep -qx "$want" || fail "frame_008.png lacks $want: $(echo $p)"
done
cmp -s "$scratch/full.wav" "$scratch/seq/audio.wav" || fail "seq/audio.wav differs from the full clip's audio"
psnr=$(ffmpeg -framerate 24 -i "$scratch/seq/frame_%03d.png" -i "$scratch/full.y4m" -lavfi "[0]scale=out_color_matrix=bt709:out_range=tv,format=yuv444p[x];[x][1]psnr" \
       -f null - 2>&1 | sed -n 's/.*PSNR.*average:\([0-9.]*\).*/\1/p')
awk -v p="$psnr" 'BEGIN { exit !(p > 45) }' || fail "the PNG frames and full.y4m differ: PSNR $psnr"
ls "$scratch" | grep -q tmp && fail "a temporary was left: $(ls "$scratch")"
# Again without audio: the earlier sequence is replaced whole (its audio.wav goes too).
expect_exit 0 "$exe" "${run[@]}" --output-path "$scratch/seq/frame_%03d.png" --no-audio
[ "$(ls "$scratch/seq" | wc -l)" -eq 9 ] && [ ! -e "$scratch/seq/audio.wav" ] || fail "seq after --no-audio: $(ls "$scratch/seq")"
ls "$scratch" | grep -q 'seq\.' && fail "the earlier sequence was left: $(ls "$scratch")"

# On a fleet of 2 CPU ranks: the same files, the skipped decodes included.
expect_exit_no_workers 0 "$exe" "${run[@]}" --ranks 2 --output-path "$scratch/r2.wav"
cmp -s "$scratch/full.wav" "$scratch/r2.wav" || fail "--ranks 2: r2.wav differs from the in-process audio"
expect_exit_no_workers 0 "$exe" "${run[@]}" --ranks 2 --output-path "$scratch/r2.y4m" --no-audio
cmp -s "$scratch/full.y4m" "$scratch/r2.y4m" || fail "--ranks 2 --no-audio: r2.y4m differs from the in-process frames"

# --jobs: every kind, each line its own output; a line's no_audio overrides the command line's.
cat > "$scratch/jobs.jsonl" <<JOBS
{"prompt": "a cat", "output_path": "$scratch/j.wav", "no_audio": false}
{"prompt": "a cat", "output_path": "$scratch/jseq/%d.png"}
{"prompt": "a cat", "output_path": "$scratch/j.y4m"}
{"prompt": "a cat", "output_path": "$scratch/j.mp4", "no_audio": "yes"}
JOBS
expect_exit 1 "$exe" --jobs "$scratch/jobs.jsonl" --seed 5 --height 64 --width 64 --num-frames 9 --no-audio
expect_contains "line 4: field 'no_audio': must be true or false, got string"
expect_contains "1 of 4 jobs failed"
cmp -s "$scratch/full.wav" "$scratch/j.wav" || fail "--jobs: j.wav differs from the full clip's audio"
[ "$(ls "$scratch/jseq" | sort -n | tr '\n' ' ')" = "0.png 1.png 2.png 3.png 4.png 5.png 6.png 7.png 8.png " ] ||
  fail "--jobs: jseq holds $(ls "$scratch/jseq")"
cmp -s "$scratch/full.y4m" "$scratch/j.y4m" || fail "--jobs: j.y4m differs from the full clip's frames"
[ -e "$scratch/j.wav" ] && [ ! -e "$scratch/j.mp4" ] || fail "--jobs: the bad line wrote j.mp4"

# Bad values: one line naming the flag, before any work, nothing written.
o="$scratch/bad.wav"
check_invalid 1 "--no-audio: --output-path $o is the audio alone; drop one of them" --prompt x --output-path "$o" --no-audio
check_invalid 1 "--output-path $scratch/x.ogg: must end in .mp4, .y4m" --prompt x --output-path "$scratch/x.ogg"
check_invalid 1 "--output-path %05d.png: a PNG sequence needs a folder of its own" --prompt x --output-path "%05d.png"
check_invalid 1 "--output-path $scratch/f/%5d.png: bad frame number" --prompt x --output-path "$scratch/f/%5d.png"
check_invalid 1 "--output-path $scratch/f/%05d.jpg: a frame pattern must end in .png" --prompt x \
  --output-path "$scratch/f/%05d.jpg"
check_invalid 1 "--output-path $scratch/f/%d_%d.png: more than one '%'" --prompt x --output-path "$scratch/f/%d_%d.png"
mkdir "$scratch/photos" && touch "$scratch/photos/holiday.png"
check_invalid 1 "--output-path $scratch/photos/%05d.png: folder $scratch/photos holds holiday.png" --prompt x \
  --output-path "$scratch/photos/%05d.png"
[ "$(ls "$scratch/photos")" = holiday.png ] || fail "photos was changed: $(ls "$scratch/photos")"
finish
