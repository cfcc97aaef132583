#!/usr/bin/env bash
# Catch2 test case names must not contain ';': CMake splits ctest's discovered names there, and the
# halves match no test (each ctest entry then runs nothing; --warn NoTests makes that fail, this
# check names the culprit).
source "$(dirname "$0")/lib.bash"
bad=$(grep -rn -E '(TEST_CASE|SECTION)\("[^"]*;' "$LTX2_SOURCE_DIR/tests" || true)
[ -z "$bad" ] || fail "test names with ';': $bad"
finish
