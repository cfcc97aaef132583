#!/usr/bin/env bash
# `ltx2 make-random`: usage mistakes are one line naming the flag; a small part of a one-layer set
# (the 19b LoRA, 154 MB) is written deterministically and recognised by `ltx2 inspect`; a failed
# write (file size limit) and Ctrl-C leave no file behind. Writing and running whole sets is the
# [slow] unit test's and CI's job (several GB each).
source "$(dirname "$0")/lib.bash"
ltx2="$LTX2_BIN/ltx2"

for args in "--model 23b:--model" "--model 19b --layers 0:--layers" "--model 22b --layers 49:--layers" \
            "--model 19b --layers x:--layers" ":--model" "--model 19b --layout flat:--layout" \
            "--model 19b --only vae:--only"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$ltx2" make-random "$scratch/usage" ${args%%:*}
  expect_one_line
  expect_contains "${args##*:}"
done
[ -e "$scratch/usage" ] && fail "a refused command created its folder"
expect_exit 0 "$ltx2" make-random --help
expect_contains "gemma-3-12b-it-qat-q4_0-unquantized"

lora=ltx-2-19b-distilled-lora-384.safetensors
expect_exit 0 "$ltx2" make-random "$scratch/a" --model 19b --layers 1 --only lora
expect_contains "$lora"
expect_contains "total: 1 files"
expect_exit 0 "$ltx2" make-random "$scratch/b" --model 19b --layers 1 --only lora
cmp -s "$scratch/a/$lora" "$scratch/b/$lora" || fail "two make-random runs wrote different files"
expect_exit 0 "$ltx2" make-random "$scratch/b" --model 19b --layers 1 --only lora --seed 1
cmp -s "$scratch/a/$lora" "$scratch/b/$lora" && fail "--seed did not change the weights"
expect_exit 0 "$ltx2" inspect "$scratch/a/$lora"
expect_contains "lora"
echo "$out" | grep -q "other" && fail "the LoRA has unrecognised tensors"

# A write that fails part way (here: past the file size limit) removes its file.
expect_exit 1 bash -c "trap '' XFSZ; ulimit -f 20000; exec '$ltx2' make-random '$scratch/c' --model 19b --layers 1 --only upsampler"
expect_one_line
expect_contains "write failed"
[ -z "$(ls -A "$scratch/c")" ] || fail "a failed write left: $(ls -A "$scratch/c")"

printf 'x' > "$scratch/file"
expect_exit 1 "$ltx2" make-random "$scratch/file/set" --model 22b --layers 1 --only lora
expect_one_line
expect_contains "$scratch/file"

# Ctrl-C while the checkpoint (5.5 GB) streams: exit 130, the temporary file removed.
"$ltx2" make-random "$scratch/d" --model 19b --layers 1 --only checkpoint > "$scratch/d.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  compgen -G "$scratch/d/*.tmp.*" > /dev/null && break
  sleep 0.05
done
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "Ctrl-C: exit $rc, expected 130: $(tail -2 "$scratch/d.log")"
grep -q "interrupted by SIGINT" "$scratch/d.log" || fail "Ctrl-C: no message: $(tail -2 "$scratch/d.log")"
[ -z "$(ls -A "$scratch/d")" ] || fail "Ctrl-C left: $(ls -A "$scratch/d")"
finish
