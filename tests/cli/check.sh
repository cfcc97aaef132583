#!/usr/bin/env bash
# The golden-parity runner (tests/golden, golden_check) on folders that are not cases, on unknown
# kinds, and its listing of kinds.
source "$(dirname "$0")/lib.bash"
check="$LTX2_GOLDEN_CHECK"

expect_exit 0 "$check" --list-kinds
expect_contains "transformer"
expect_contains "pipeline_ti2vid"
expect_exit 2 "$check"

mkdir -p "$scratch/empty"
expect_exit 1 "$check" "$scratch/empty"
expect_contains "no case.json"

mkdir -p "$scratch/unknown"
echo '{"what": "something else"}' > "$scratch/unknown/case.json"
cp "$golden/schedulers/io.safetensors" "$scratch/unknown/"
expect_exit 1 "$check" "$scratch/unknown"
expect_contains "matches no known kind"

mkdir -p "$scratch/badjson"
echo '{"what": ' > "$scratch/badjson/case.json"
expect_exit 1 "$check" "$scratch/badjson"
expect_contains "not valid JSON"

# --json gives one entry per case.
expect_exit 1 "$check" --json "$scratch/empty" "$scratch/unknown"
[ "$(echo "$out" | grep -c '"case"')" -eq 2 ] || fail "--json: expected two cases"
finish
