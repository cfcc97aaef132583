#!/usr/bin/env bash
# Renders every line of a prompts file (one prompt per line) into clip_<n>.mp4, two ways:
#   1. a shell loop calling ltx2-distilled once per prompt (simple; loads the weights every time);
#   2. one --jobs file, so the weights load once (faster for many prompts).
# Usage: scripts/batch_example.sh PROMPTS.txt OUT_DIR [more ltx2-distilled flags, e.g. checkpoints]
set -euo pipefail
prompts=${1:?usage: $0 PROMPTS.txt OUT_DIR [ltx2-distilled flags...]}
out=${2:?usage: $0 PROMPTS.txt OUT_DIR [ltx2-distilled flags...]}
shift 2
exe="$(dirname "$0")/../build/bin/ltx2-distilled"
mkdir -p "$out/loop" "$out/jobs"

# 1. One process per prompt; a failed prompt does not stop the others.
n=0
failed=0
while IFS= read -r prompt || [ -n "$prompt" ]; do
  [ -z "$prompt" ] && continue
  n=$((n + 1))
  "$exe" --prompt "$prompt" --seed "$n" --output-path "$out/loop/clip_$n.mp4" "$@" || failed=$((failed + 1))
done < "$prompts"
echo "loop: $((n - failed)) of $n clips written to $out/loop"

# 2. The same prompts as a JSON-lines jobs file (prompts escaped for JSON with sed).
jobs="$out/jobs/jobs.jsonl"
n=0
: > "$jobs"
while IFS= read -r prompt || [ -n "$prompt" ]; do
  [ -z "$prompt" ] && continue
  n=$((n + 1))
  escaped=$(printf '%s' "$prompt" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g')
  printf '{"prompt": "%s", "seed": %d, "output_path": "%s"}\n' "$escaped" "$n" "$out/jobs/clip_$n.mp4" >> "$jobs"
done < "$prompts"
"$exe" --jobs "$jobs" "$@"
echo "jobs: $n clips written to $out/jobs"
