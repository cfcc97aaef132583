#!/usr/bin/env bash
# A --jobs file as a batch (apps/common/batch.h) on the embedded tiny model: two shards share a
# 4-line file (--shard, and a Slurm array task's variables), each keeps a results manifest, a rerun
# with --skip-existing redoes nothing and loads no model, and the batch flags without --jobs are
# refused.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
export LTX2_CACHE_DIR="$scratch/cache"
small=(--height 64 --width 64 --num-frames 9 --log-format json)
mkdir "$scratch/out"
cat > "$scratch/jobs.jsonl" <<JOBS
{"prompt": "a cat", "output_path": "$scratch/out/1.y4m", "no_audio": true}

{"prompt": "a dog", "output_path": "$scratch/out/2.y4m", "no_audio": true}
{"prompt": "a cow", "output_path": "$scratch/out/3.y4m", "no_audio": true}
{"prompt": "a fox", "output_path": "$scratch/out/4.y4m", "no_audio": true}
JOBS

# Shard 0 of 2 runs the 1st and 3rd job lines (file lines 1 and 4); shard 1, as Slurm array task 1
# of 2 (no --shard), the 2nd and 4th.
expect_exit 0 "$exe" --jobs "$scratch/jobs.jsonl" --shard 0/2 --manifest "$scratch/m0.jsonl" "${small[@]}"
expect_contains "shard 0/2: 2 of the file's 4 jobs"
[ -s "$scratch/out/1.y4m" ] && [ -s "$scratch/out/3.y4m" ] || fail "shard 0 did not write 1.y4m and 3.y4m"
[ -e "$scratch/out/2.y4m" ] || [ -e "$scratch/out/4.y4m" ] && fail "shard 0 wrote another shard's output"
expect_exit 0 env SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 \
  "$exe" --jobs "$scratch/jobs.jsonl" --manifest "$scratch/m1.jsonl" "${small[@]}"
expect_contains "shard 1/2: 2 of the file's 4 jobs"
[ -s "$scratch/out/2.y4m" ] && [ -s "$scratch/out/4.y4m" ] || fail "shard 1 did not write 2.y4m and 4.y4m"
for m in 0 1; do
  [ "$(wc -l < "$scratch/m$m.jsonl")" -eq 2 ] || fail "m$m.jsonl: $(cat "$scratch/m$m.jsonl")"
  [ "$(grep -c '"status":"done"' "$scratch/m$m.jsonl")" -eq 2 ] || fail "m$m.jsonl: $(cat "$scratch/m$m.jsonl")"
done
grep -q '"line":4,' "$scratch/m0.jsonl" || fail "m0.jsonl does not name file line 4: $(cat "$scratch/m0.jsonl")"
grep -q '"line":5,' "$scratch/m1.jsonl" || fail "m1.jsonl does not name file line 5: $(cat "$scratch/m1.jsonl")"
ls "$scratch" | grep -q "m[01].jsonl\.\(tmp\|lock\)" && fail "a manifest's temporary or lock was left: $(ls "$scratch")"

# After a lost node: every output there, a rerun skips all (and loads no model).
rm "$scratch/out/3.y4m"
expect_exit 0 "$exe" --jobs "$scratch/jobs.jsonl" --shard 0/2 --skip-existing --manifest "$scratch/m0.jsonl" "${small[@]}"
expect_contains "line 1: skipped: its output exists"
[ -s "$scratch/out/3.y4m" ] || fail "the rerun did not redo the missing 3.y4m"
grep -q '"line":1,.*"status":"skipped"' "$scratch/m0.jsonl" || fail "m0.jsonl: $(cat "$scratch/m0.jsonl")"
grep -q '"line":4,.*"status":"done"' "$scratch/m0.jsonl" || fail "m0.jsonl: $(cat "$scratch/m0.jsonl")"
expect_exit 0 "$exe" --jobs "$scratch/jobs.jsonl" --shard 0/2 --skip-existing "${small[@]}"
expect_contains "nothing to run"
echo "$out" | grep -q "models loaded" && fail "a batch with nothing to run loaded the models"

# scripts/slurm/render_array.sbatch as Slurm runs it for array task 1 of 2 (its #SBATCH lines are
# comments to bash): shard 1, every output there, skipped.
expect_exit 0 env SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 LTX2_PROGRAM="$exe" \
  "$LTX2_SOURCE_DIR/scripts/slurm/render_array.sbatch" "$scratch/jobs.jsonl" "$scratch/manifests" "${small[@]}"
[ "$(grep -c '"status":"skipped"' "$scratch/manifests/task-1.jsonl")" -eq 2 ] ||
  fail "task-1.jsonl: $(cat "$scratch/manifests/task-1.jsonl" 2>&1)"

# Usage mistakes: one line naming the flag, exit 2.
expect_exit 2 "$exe" --prompt x --output-path "$scratch/x.mp4" --shard 0/2
expect_contains "--shard needs --jobs FILE"
expect_exit 2 "$exe" --jobs "$scratch/jobs.jsonl" --shard 2/2
expect_contains "--shard 2/2: K must be below N"
expect_exit 2 env SLURM_ARRAY_TASK_ID=x SLURM_ARRAY_TASK_COUNT=2 "$exe" --jobs "$scratch/jobs.jsonl"
expect_contains "SLURM_ARRAY_TASK_ID: 'x' is not a whole number"
finish
