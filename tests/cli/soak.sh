#!/usr/bin/env bash
# Soak: a --jobs batch of good and bad lines mixed, through 2 CPU ranks, with a worker killed
# (SIGKILL) and later another one stopped (SIGSTOP: the heartbeat stops) while it runs. Every good
# line is written (a valid MP4; the first one byte for byte the in-process file), every bad line is
# reported with its line number, and nothing is left: no worker process, no shared memory, no
# temporary or lock file.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
small=(--height 64 --width 64 --num-frames 9)
out_dir="$scratch/out"
mkdir -p "$out_dir/folder.mp4"
printf 'not an image' > "$out_dir/text.png"

good() { echo "{\"prompt\": \"soak $1\", \"seed\": $1, \"output_path\": \"$out_dir/g$1.mp4\"}"; }
{
  good 1
  echo '{"prompt": "unterminated'
  good 2
  echo "{\"seed\": 1.5, \"output_path\": \"$out_dir/b4.mp4\"}"
  good 3
  echo "{\"images\": [[\"$out_dir/text.png\", 0, 1.0]], \"output_path\": \"$out_dir/b6.mp4\"}"
  good 4
  echo "{\"output_path\": \"$out_dir/folder.mp4\"}"
  good 5
  echo "{\"seed\": 9, \"output_path\": \"$out_dir/g1.mp4\"}"
  good 6
  echo "{\"height\": 4294967360, \"output_path\": \"$out_dir/b12.mp4\"}"
  good 7
} > "$scratch/jobs.jsonl"

expect_exit 0 "$exe" --prompt "soak 1" --seed 1 "${small[@]}" --output-path "$scratch/local1.mp4"

"$exe" --jobs "$scratch/jobs.jsonl" --prompt "soak" "${small[@]}" --ranks 2 --retries 3 --log-format json \
  2>"$scratch/run.log" &
pid=$!
written() { ls "$out_dir"/g*.mp4 2>/dev/null | wc -l; }
# A worker killed once two outputs exist, another stopped once four do (each may land mid-job or
# between jobs; both must be survived).
for _ in $(seq 600); do [ "$(written)" -ge 2 ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
victim=$(workers_of "$pid" | head -1)
[ -n "$victim" ] && kill -KILL "$victim" || fail "no worker to kill"
for _ in $(seq 600); do [ "$(written)" -ge 4 ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
victim=$(workers_of "$pid" | tail -1)
[ -n "$victim" ] && kill -STOP "$victim" || fail "no worker to stop"
wait "$pid"
rc=$?
out=$(cat "$scratch/run.log")
[ "$rc" -eq 1 ] || fail "the batch exited $rc, expected 1 (some lines are bad): $(tail -3 "$scratch/run.log")"
for n in 1 2 3 4 5 6 7; do expect_mp4 "$out_dir/g$n.mp4" 9 64 64 24; done
cmp -s "$scratch/local1.mp4" "$out_dir/g1.mp4" || fail "line 1's file differs from the in-process run's"
expect_contains '"line":2,"message":"not a JSON object: parse error'
expect_contains "\"line\":4,\"message\":\"field 'seed': must be an integer, got 1.5\""
expect_contains "\"line\":6,\"message\":\"--image $out_dir/text.png: not a PNG, JPEG or WebP image"
expect_contains "\"line\":8,\"message\":\"--output-path $out_dir/folder.mp4: is a folder\""
expect_contains "\"line\":10,\"message\":\"output_path $out_dir/g1.mp4: line 1 writes it already\""
expect_contains "\"line\":12,\"message\":\"field 'height': 4294967360 is out of range"
expect_contains "6 of 13 jobs failed"
for n in 4 6 12; do expect_no_output "$out_dir/b$n.mp4"; done
workers_of "$pid" >/dev/null && fail "worker processes left behind: $(workers_of "$pid")"
ls /dev/shm | grep -q -- "-$pid-" && fail "shared memory left behind: $(ls /dev/shm | grep -- "-$pid-")"
left=$(ls -a "$out_dir" | grep -E '\.tmp\.|\.lock$')
[ -z "$left" ] || fail "temporary or lock files left behind: $left"
finish
