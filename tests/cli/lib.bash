# Shared helpers for the command-line tests (sourced). LTX2_BIN and LTX2_SOURCE_DIR come from ctest.
set -u
fails=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ltx2-cli.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
golden="$LTX2_SOURCE_DIR/tests/data/golden"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_exit CODE CMD...: runs CMD, captures stdout+stderr in $out, checks the exit status.
expect_exit() {
  local want=$1; shift
  out=$("$@" 2>&1); local got=$?
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want: $(echo "$out" | tail -3)"
}

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
