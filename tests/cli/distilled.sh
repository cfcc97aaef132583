#!/usr/bin/env bash
# ltx2-distilled on the embedded tiny model (made fresh in the scratch folder): an MP4 of the asked
# shape, byte-identical for the same seed (also through --jobs), different for another seed; JSON
# log lines; --jobs with a bad line; SIGINT mid-run; one clear line for every invalid input.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
small=(--height 64 --width 64 --num-frames 9)

# One run, JSON lines: every line one object; progress, output and the phase timings are there.
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/a.mp4" --seed 5 "${small[@]}" --log-format json
expect_mp4 "$scratch/a.mp4" 9 64 64 24
bad_lines=$(echo "$out" | grep -vc '^{.*}$')
[ "$bad_lines" -eq 0 ] || fail "non-JSON lines in --log-format json: $(echo "$out" | grep -v '^{.*}$' | head -2)"
for want in '"event":"progress","stage":"stage 1"' '"event":"progress","stage":"decode"' '"event":"output"' \
            '"event":"timings"' '"text encode":' '"stage 2":' '"upsample":' '"decode":' '"write output":' \
            'embedded tiny model'; do
  expect_contains "$want"
done
ls "$scratch" | grep -q tmp && fail "a temporary file was left: $(ls "$scratch")"
# Where the job runs is the first thing said: this machine has no GPU (tests/cli/gpu checks a GPU one).
echo "$out" | head -1 | grep -qF '"message":"running on the CPU in this process, float32' ||
  fail "the first line does not say where the job runs: $(echo "$out" | head -1)"
# A byte that is not UTF-8 in a path that ends up in the error: still one JSON line, no abort.
expect_exit 1 "$exe" --prompt "a cat" --output-path "$scratch/missing/"$'\xff'".mp4" "${small[@]}" --log-format json
expect_one_line
echo "$out" | grep -q '^{"event":"error","message":".*\\ufffd\|^{"event":"error","message":".*'$'\xef\xbf\xbd' ||
  fail "a bad byte in the message: $out"

# .y4m: the same clip uncompressed (read back by ffprobe), the audio as a .wav beside it; its
# frames are the MP4's before compression, so the two decode to nearly the same pictures.
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/a.y4m" --seed 5 "${small[@]}"
v=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=width,height,nb_read_frames,r_frame_rate \
    -of default=nw=1 "$scratch/a.y4m")
for want in width=64 height=64 nb_read_frames=9 r_frame_rate=24/1; do
  echo "$v" | grep -qx "$want" || fail "a.y4m lacks $want: $(echo $v)"
done
a=$(ffprobe -v error -show_entries stream=codec_name,channels,duration -of default=nw=1 "$scratch/a.wav")
echo "$a" | grep -qx codec_name=pcm_s16le && echo "$a" | grep -qx channels=2 || fail "a.wav: $(echo $a)"
awk -v d="$(echo "$a" | sed -n 's/^duration=//p')" 'BEGIN { e = d - 9 / 24; exit !(e < 0.1 && e > -0.1) }' ||
  fail "a.wav does not last 9/24 s: $(echo $a)"
# (~31 dB measured: the tiny model's noise-like frames at CRF 19; a wrong colour conversion gives <20.)
psnr=$(ffmpeg -i "$scratch/a.y4m" -i "$scratch/a.mp4" -lavfi "[0]format=yuv420p[x];[x][1]psnr" -f null - 2>&1 |
       sed -n 's/.*PSNR.*average:\([0-9.]*\).*/\1/p')
awk -v p="$psnr" 'BEGIN { exit !(p > 25) }' || fail "a.y4m and a.mp4 differ: PSNR $psnr"

# --quantization fp8-cast reaches the transformer: its block linears rounded to FP8 change the frames.
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/cast.y4m" --seed 5 "${small[@]}" --quantization fp8-cast
[ -s "$scratch/cast.y4m" ] || fail "no cast.y4m"
cmp -s "$scratch/a.y4m" "$scratch/cast.y4m" && fail "--quantization fp8-cast left the frames unchanged"
# --quantization fp8 (ours, per-channel weights and per-token activations) runs the bf16 tiny checkpoint
# with its block linears quantized at load; the default (auto) on the CPU is none: a.y4m's bytes.
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/fp8.y4m" --seed 5 "${small[@]}" --quantization fp8
[ -s "$scratch/fp8.y4m" ] || fail "no fp8.y4m"
cmp -s "$scratch/a.y4m" "$scratch/fp8.y4m" && fail "--quantization fp8 left the frames unchanged"
cmp -s "$scratch/cast.y4m" "$scratch/fp8.y4m" && fail "--quantization fp8 gave fp8-cast's frames"
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/auto.y4m" --seed 5 "${small[@]}" --quantization auto
cmp -s "$scratch/a.y4m" "$scratch/auto.y4m" || fail "--quantization auto on the CPU changed the frames"

# --enhance-prompt: Gemma rewrites the prompt (logged) and the rewrite is what is encoded: other frames
# than a.y4m's, the same on a rerun (greedy), through a fleet of 2 ranks (rank 0 enhances) and from a
# --jobs line; a system text from a file changes the rewrite.
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/enh.y4m" --seed 5 "${small[@]}" --enhance-prompt
expect_contains "enhanced prompt ("
enhanced_text() { echo "$out" | sed -n 's/.*enhanced prompt ([0-9]* new tokens in [0-9.]* s): //p'; }
enhanced_line=$(enhanced_text)
[ -n "$enhanced_line" ] || fail "no enhanced prompt logged: $(echo "$out" | grep enhanced)"
cmp -s "$scratch/a.y4m" "$scratch/enh.y4m" && fail "--enhance-prompt left the frames unchanged"
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/enh2.y4m" --seed 5 "${small[@]}" --enhance-prompt \
  --ranks 2
cmp -s "$scratch/enh.y4m" "$scratch/enh2.y4m" || fail "--enhance-prompt through 2 ranks changed the frames"
echo '{"prompt": "a cat", "output_path": "'"$scratch"'/enh3.y4m", "enhance_prompt": true}' > "$scratch/enh.jsonl"
expect_exit 0 "$exe" --jobs "$scratch/enh.jsonl" --seed 5 "${small[@]}"
cmp -s "$scratch/enh.y4m" "$scratch/enh3.y4m" || fail "--enhance-prompt from a --jobs line changed the frames"
echo "Answer in one word." > "$scratch/system.txt"
expect_exit 0 "$exe" --prompt "a cat" --output-path "$scratch/enh4.y4m" --seed 5 "${small[@]}" --enhance-prompt \
  --enhance-system-prompt "$scratch/system.txt"
[ "$(enhanced_text)" != "$enhanced_line" ] || fail "--enhance-system-prompt was not used"
o="$scratch/bad.mp4"
# The embedded tiny model's Gemma has no vision tower: --enhance-prompt with --image is refused naming it.
check_invalid 1 "has no Gemma 3 vision tower (its config has no vision_config)" --prompt x --output-path "$o" --enhance-prompt \
  --image "$LTX2_SOURCE_DIR/tests/data/golden/pipeline_ti2vid/image.png" 0 1
check_invalid 1 "--enhance-system-prompt $scratch/none.txt: no such file" --prompt x --output-path "$o" \
  --enhance-prompt --enhance-system-prompt "$scratch/none.txt"

# --jobs: the command line's values fill in; line 2 is bad and reported, the others run.
cat > "$scratch/jobs.jsonl" <<JOBS
{"prompt": "a cat", "output_path": "$scratch/j1.mp4", "seed": 5}
{"prompt": "a dog", "output_path": "$scratch/bad.mp4", "num_frames": 10}
{"prompt": "a cat", "output_path": "$scratch/j3.mp4", "seed": 6, "frame_rate": 25}
{"prompt": "a cow", "output_path": "$scratch/j4.mp4", "frame_rate": 1e309}
{"prompt": "a cow", "output_path": "$scratch/./j1.mp4", "seed": 7}
JOBS
expect_exit 1 "$exe" --jobs "$scratch/jobs.jsonl" "${small[@]}"
expect_contains "line 2: --num-frames must be 8k+1"
expect_contains "line 4: not a JSON object: number overflow"
expect_contains "line 5: output_path $scratch/./j1.mp4: line 1 writes it already"
expect_contains "3 of 5 jobs failed"
expect_no_output "$scratch/j4.mp4"
expect_contains "timings:"
expect_no_output "$scratch/bad.mp4"
cmp -s "$scratch/a.mp4" "$scratch/j1.mp4" || fail "the same seed gave different MP4 files"
expect_mp4 "$scratch/j3.mp4" 9 64 64 25
cmp -s "$scratch/a.mp4" "$scratch/j3.mp4" && fail "another seed gave the same MP4 file"

# --job-timeout: a job past it fails in one line naming it; given, it runs even one device as a
# worker process (the only kind of run a timeout can stop).
expect_exit 1 "$exe" --prompt "a cat" --output-path "$scratch/late.mp4" "${small[@]}" --job-timeout 0.3
expect_contains "running on 1 CPU worker process"
expect_contains "job 1 failed: fleet broken: job 1 passed its timeout of 300 ms (--job-timeout"
expect_no_output "$scratch/late.mp4"

# SIGINT during stage 1 (of a run long enough to be caught there): no output, no temporary file,
# exit 128 + 2.
"$exe" --prompt "a cat" --output-path "$scratch/int.mp4" --num-frames 65 --log-format json 2>"$scratch/int.log" &
pid=$!
for _ in $(seq 300); do grep -q '"stage":"stage 1"' "$scratch/int.log" && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "SIGINT: exit $rc, expected 130: $(tail -2 "$scratch/int.log")"
grep -q interrupted "$scratch/int.log" || fail "SIGINT: no message: $(tail -2 "$scratch/int.log")"
expect_no_output "$scratch/int.mp4"

# Invalid inputs: one line naming the flag, no output file, before any work; exit 2 for a flag
# value its field refuses (a usage mistake), 1 for a request that cannot run.
printf 'not an image' > "$scratch/text.png"
png="$golden/pipeline_ti2vid/image.png"
ckpt="$golden/pipeline_ti2vid/checkpoint.safetensors"
o="$scratch/bad.mp4"
check_invalid 1 "--num-frames must be 8k+1" --prompt x --output-path "$o" --num-frames 10
check_invalid 1 "--height must be a positive multiple of 64" --prompt x --output-path "$o" --height 100
check_invalid 1 "--width must be a positive multiple of 64" --prompt x --output-path "$o" --width 70
check_invalid 1 "--image $scratch/none.png: no such file" --prompt x --output-path "$o" --image "$scratch/none.png" 0 1
check_invalid 1 "strength must be in [0, 1]" --prompt x --output-path "$o" --image "$png" 0 1.5
check_invalid 2 "--image $png STRENGTH: 'abc' is not a number" --prompt x --output-path "$o" --image "$png" 0 abc
check_invalid 1 "--image $scratch/text.png" --prompt x --output-path "$o" --image "$scratch/text.png" 0 1
check_invalid 1 "--distilled-checkpoint-path $scratch/none.safetensors: no such file" --prompt x \
  --output-path "$o" --distilled-checkpoint-path "$scratch/none.safetensors"
check_invalid 1 "cannot be mixed" --prompt x --output-path "$o" --distilled-checkpoint-path "$ckpt" --transformer-path "$ckpt"
check_invalid 1 "--lora $scratch/none.safetensors: no such file" --prompt x --output-path "$o" --lora "$scratch/none.safetensors"
check_invalid 1 "--output-path $scratch/bad.avi: must end in .mp4" --prompt x --output-path "$scratch/bad.avi"
check_invalid 1 "--output-path $scratch/no/o.mp4: folder" --prompt x --output-path "$scratch/no/o.mp4"
mkdir "$scratch/dir.mp4"
check_invalid 1 "--output-path $scratch/dir.mp4: is a folder" --prompt x --output-path "$scratch/dir.mp4"
check_invalid 1 "--prompt is required" --output-path "$o"
check_invalid 1 "--prompt is empty" --prompt " " --output-path "$o"
check_invalid 1 "and --gpus cannot be combined" --prompt x --output-path "$o" --ranks 2 --gpus 0
check_invalid 2 "--vae-tiles must be HxW" --prompt x --output-path "$o" --ranks 2 --vae-tiles 2
check_invalid 1 "--jobs $scratch/none.jsonl: cannot read" --jobs "$scratch/none.jsonl"
check_invalid 2 "--quantization 'int8': expected auto, none, fp8, fp8-cast or fp8-scaled-mm" --prompt x --output-path "$o" --quantization int8
check_invalid 2 "--quantization nvfp4-cast: NVFP4 needs Blackwell" --prompt x --output-path "$o" --quantization nvfp4-cast
# fp8-scaled-mm is refused at load for a checkpoint not stored in FP8 (the embedded tiny model), as
# the reference refuses it, with the way out named.
expect_exit 1 "$exe" --prompt x --output-path "$o" --quantization fp8-scaled-mm
expect_contains "quantization fp8-scaled-mm needs a checkpoint stored in FP8"
expect_contains "use --quantization fp8-cast"
expect_no_output "$o"
check_invalid 2 "--job-timeout must be a positive number of seconds up to 1e9, got 0" --prompt x --output-path "$o" --job-timeout 0
check_invalid 2 "--job-timeout must be a positive number of seconds up to 1e9, got -1" --prompt x --output-path "$o" --job-timeout -1
check_invalid 2 "--job-timeout: 'abc' is not a number" --prompt x --output-path "$o" --job-timeout abc
check_invalid 2 "--log-format: xml not in {text,json}" --prompt x --output-path "$o" --log-format xml
check_invalid 2 "--seed" --prompt x --output-path "$o" --seed many
finish
