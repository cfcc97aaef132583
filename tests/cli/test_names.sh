#!/usr/bin/env bash
# Catch2 test case names must not contain ';': CMake splits ctest's discovered names there, and the
# halves match no test (each ctest entry then runs nothing; --warn NoTests makes that fail, this
# check names the culprit).
source "$(dirname "$0")/lib.bash"
# -z: a name may start on the line after TEST_CASE(.
bad=$(grep -rlPz '(TEST_CASE|SECTION)\(\s*"[^"]*;' "$LTX2_SOURCE_DIR/tests" || true)
[ -z "$bad" ] || fail "test names with ';' in: $bad"
finish
