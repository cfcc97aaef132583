# Shared helpers for the command-line tests (sourced). LTX2_BIN and LTX2_SOURCE_DIR come from ctest.
set -u
fails=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ltx2-cli.XXXXXX")
trap '[ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$scratch"' EXIT
golden="$LTX2_SOURCE_DIR/tests/data/golden"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_exit CODE CMD...: runs CMD, captures stdout+stderr in $out, checks the exit status.
expect_exit() {
  local want=$1; shift
  out=$("$@" 2>&1); local got=$?
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want: $(echo "$out" | tail -3)"
}

# expect_exit_no_workers CODE CMD...: expect_exit for a run that may start a fleet; afterwards no
# worker process of that run (workers carry their driver's pid) may be left.
expect_exit_no_workers() {
  local want=$1; shift
  "$@" >"$scratch/.run_output" 2>&1 &
  local driver=$!
  wait "$driver"; local got=$?
  out=$(cat "$scratch/.run_output")
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want: $(echo "$out" | tail -3)"
  workers_of "$driver" >/dev/null && fail "'$*' left worker processes behind: $(workers_of "$driver")"
}

# workers_of PID: the pids of the fleet workers of driver PID (none: exit status 1).
workers_of() { pgrep -f -- "--worker .*--driver-pid $1( |\$)"; }

expect_contains() {
  echo "$out" | grep -qF -- "$1" || fail "output lacks '$1': $(echo "$out" | tail -3)"
}

# The error path prints exactly one line.
expect_one_line() {
  [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "expected a one-line message, got: $out"
}

finish() {
  if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
  echo "all checks passed"
}

# expect_mp4 FILE FRAMES WIDTH HEIGHT RATE: one H.264 stream of that shape and rate and one stereo
# AAC stream whose duration is the video's within 0.1 s.
expect_mp4() {
  local f=$1 frames=$2 width=$3 height=$4 rate=$5 v a
  [ -s "$f" ] || { fail "$f was not written"; return; }
  v=$(ffprobe -v error -select_streams v -show_entries stream=codec_name,width,height,nb_frames,r_frame_rate \
      -of default=nw=1 "$f")
  a=$(ffprobe -v error -select_streams a -show_entries stream=codec_name,channels,duration -of default=nw=1 "$f")
  [ "$(echo "$v" | grep -c '^codec_name=')" -eq 1 ] || fail "$f: expected one video stream: $v"
  [ "$(echo "$a" | grep -c '^codec_name=')" -eq 1 ] || fail "$f: expected one audio stream: $a"
  for want in codec_name=h264 "width=$width" "height=$height" "nb_frames=$frames" "r_frame_rate=$rate/1"; do
    echo "$v" | grep -qx "$want" || fail "$f: video stream lacks $want: $(echo $v)"
  done
  for want in codec_name=aac channels=2; do
    echo "$a" | grep -qx "$want" || fail "$f: audio stream lacks $want: $(echo $a)"
  done
  local d
  d=$(echo "$a" | sed -n 's/^duration=//p')
  awk -v d="$d" -v n="$frames" -v r="$rate" 'BEGIN { e = d - n / r; exit !(e < 0.1 && e > -0.1) }' ||
    fail "$f: audio lasts $d s, the video $frames/$rate s"
}

# expect_no_output PATH: neither the file nor a temporary file of it exists.
expect_no_output() {
  local left
  left=$(ls "$1"* 2>/dev/null)
  [ -z "$left" ] || fail "left behind: $left"
}

# A mistake the generation program $exe must refuse: exit EXIT_CODE, one line holding EXPECTED_TEXT,
# and nothing written at $o.
check_invalid() {  # EXIT_CODE EXPECTED_TEXT ARGS...
  local code=$1 text=$2
  shift 2
  expect_exit "$code" "$exe" "$@"
  expect_one_line
  expect_contains "$text"
  expect_no_output "$o"
}
