#!/usr/bin/env bash
# One job across nodes (runtime/mpi/node_link.h) on this machine: `mpirun -np 2` starts
# ltx2-distilled twice, as node 0 (the driver) and node 1 (a node agent), each with its own CPU
# worker processes over its own shared memory; the fleet's communicator and results cross between
# them over MPI (TCP on loopback). Checked: 2 nodes x 2 ranks and 2 nodes x 1 rank write the
# same MP4, byte for byte, as one rank in one process, and so does ltx2-ti2vid's guidance split
# into one group of ranks a node; SIGKILLing the agent, or the driver, in the
# middle of the job ends the run on both nodes within 30 s, non-zero, with no process of it left
# on either (driver, agent, workers) and no output file. Every wait is bounded.
source "$(dirname "$0")/lib.bash"
exe="$LTX2_BIN/ltx2-distilled"
command -v mpirun >/dev/null || { fail "mpirun is not installed (scripts/setup.sh installs openmpi-bin)"; finish; }
export LTX2_CACHE_DIR="$scratch/cache"
# Open MPI in a container, as root, on one machine: TCP on loopback (no shared-memory transport,
# which needs more /dev/shm and ptrace rights than containers give), and no core binding: each
# node process forks its workers, which would otherwise all share the one core mpirun bound it to
# (and x264 would see one CPU there, changing the file's encoder settings).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
# One OpenMP thread a worker: 4 workers on 2 cores spin in each other's barriers otherwise.
export OMP_NUM_THREADS=1
mpi=(timeout -k 5 120 mpirun --bind-to none --oversubscribe -np 2)
run=(--prompt "a fox in the snow" --seed 3 --height 64 --width 192 --num-frames 9 --vae-tiles 1x2)

expect_exit_no_workers 0 "$exe" "${run[@]}" --ranks 1 --output-path "$scratch/one.mp4"
expect_mp4 "$scratch/one.mp4" 9 192 64 24
for ranks in 2 1; do
  expect_exit 0 "${mpi[@]}" "$exe" "${run[@]}" --ranks "$ranks" --output-path "$scratch/nodes_r$ranks.mp4"
  expect_contains "running on 2 nodes (MPI), each: $ranks CPU worker process"
  cmp -s "$scratch/one.mp4" "$scratch/nodes_r$ranks.mp4" || fail "2 nodes x $ranks ranks differ from one rank"
done

# ltx2-ti2vid with 2 guidance passes a step on 2 nodes x 2 ranks: the groups of ranks follow the
# nodes (each node's 2 ranks run one pass sequence parallel over their own shared memory, and only
# the step's all-gather crosses between the nodes); the one-process bytes.
ti2vid=("$LTX2_BIN/ltx2-ti2vid" --prompt "a cat" --height 64 --width 64 --num-frames 9 --num-inference-steps 2
  --video-stg-guidance-scale 0 --audio-stg-guidance-scale 0 --a2v-guidance-scale 1 --v2a-guidance-scale 1)
expect_exit_no_workers 0 "${ti2vid[@]}" --output-path "$scratch/ti2vid_one.mp4"
expect_exit 0 "${mpi[@]}" "${ti2vid[@]}" --ranks 2 --output-path "$scratch/ti2vid_nodes.mp4"
expect_contains "guidance passes: 2 a step over 2 groups of 2 ranks"
cmp -s "$scratch/ti2vid_one.mp4" "$scratch/ti2vid_nodes.mp4" || fail "ti2vid on 2 nodes x 2 ranks differs from one process"

# The live processes of a run whose command line holds $1 (zombies left to a container's init
# are not processes any more): node processes match it, workers carry a node process's pid.
run_processes() {
  local p nodes=()
  for p in $(pgrep -f -- "$1"); do
    [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" = Z ] || nodes+=("$p")
  done
  echo "${nodes[@]}"
  for p in "${nodes[@]}"; do pgrep -f -- "--worker .*--driver-pid $p( |\$)"; done
}

# kill_node RANK: SIGKILLs MPI rank RANK of a 2-node job in its first stage; the run must end.
kill_node() {
  local rank=$1 tag="kill-node-$1-$$" log="$scratch/kill$1.log" victim="" p
  "${mpi[@]}" "$exe" --prompt "$tag" --seed 3 --height 128 --width 832 --num-frames 97 --ranks 2 \
    --output-path "$scratch/kill$rank.mp4" >"$log" 2>&1 &
  local launcher=$!
  for _ in $(seq 300); do grep -q "stage 1 1/" "$log" && break; sleep 0.1; done
  grep -q "stage 1 1/" "$log" || { fail "node kill $rank: the job did not start: $(tail -3 "$log")"; }
  for p in $(pgrep -f -- "--prompt $tag"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" && victim=$p
  done
  [ -n "$victim" ] || fail "node kill $rank: no process of MPI rank $rank"
  local workers
  workers=$(pgrep -f -- "--worker .*--driver-pid $victim( |\$)" | wc -l)
  [ "$workers" -eq 2 ] || fail "node kill $rank: MPI rank $rank has $workers workers, expected 2"
  local start=$SECONDS
  [ -n "$victim" ] && kill -9 "$victim"
  wait "$launcher"
  local rc=$? took=$((SECONDS - start))
  [ "$rc" -ne 0 ] || fail "node kill $rank: the run exited 0"
  [ "$took" -le 30 ] || fail "node kill $rank: the run took $took s to end"
  echo "node kill $rank: the run ended in $took s (exit $rc)"
  for _ in $(seq 50); do [ -z "$(run_processes "$tag" | tr -d ' \n')" ] && break; sleep 0.1; done
  left=$(run_processes "$tag" | tr -d '\n')
  [ -z "${left// /}" ] || fail "node kill $rank: processes left: $left"
  # A driver stopped in order removes its partial output; a SIGKILLed one cannot, but never
  # leaves the finished file.
  if [ "$rank" -ne 0 ]; then expect_no_output "$scratch/kill$rank.mp4"; fi
  [ -e "$scratch/kill$rank.mp4" ] && fail "node kill $rank: the output was written"
}
kill_node 1
kill_node 0
finish
