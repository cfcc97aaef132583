#!/usr/bin/env bash
# A real Slurm on this machine: munged, slurmctld and slurmd from the distribution's packages
# (scripts/setup.sh), started here with a generated slurm.conf on free ports, all files in the
# scratch folder. A 2-task array of scripts/slurm/render_array.sbatch renders a 4-line jobs file
# with the embedded tiny model; the 4 outputs and both manifests are checked; everything is torn
# down (no daemon, job or file left running). Bounded: each wait has a timeout.
source "$(dirname "$0")/lib.bash"
for tool in munged mungekey slurmctld slurmd sbatch sinfo; do
  command -v "$tool" >/dev/null || { fail "$tool is not installed (scripts/setup.sh installs it)"; finish; }
done
cluster="$scratch/slurm"
mkdir -m 700 "$cluster" "$cluster/state" "$cluster/spool" "$scratch/out"
export SLURM_CONF="$cluster/slurm.conf"
pids=()
teardown() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  munged --stop --socket="$cluster/munge.socket" >/dev/null 2>&1
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  [ -n "${KEEP_SCRATCH:-}" ] || rm -rf "$scratch"
}
trap teardown EXIT

# munge: a key of our own and a socket in the scratch folder.
mungekey --create --keyfile="$cluster/munge.key" || fail "mungekey failed"
munged --force --key-file="$cluster/munge.key" --socket="$cluster/munge.socket" --pid-file="$cluster/munged.pid" \
  --log-file="$cluster/munged.log" --seed-file="$cluster/munged.seed" || fail "munged did not start"

# Two free ports (bash's /dev/tcp: a refused connection means nobody listens there).
ports=()
for port in $(seq $((20000 + $$ % 20000)) 45000); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || ports+=("$port")
  [ ${#ports[@]} -eq 2 ] && break
done
host=$(hostname -s)
user=$(id -un)
cat > "$SLURM_CONF" <<CONF
ClusterName=ltx2ci
SlurmctldHost=$host
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$cluster/munge.socket
CredType=cred/munge
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/slurmctld.log
SlurmdLogFile=$cluster/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -D -f "$SLURM_CONF" > "$cluster/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" > "$cluster/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
sinfo -h -o %T 2>/dev/null | grep -q idle ||
  fail "the node did not come up: $(tail -3 "$cluster/slurmctld.log" "$cluster/slurmd.log" 2>&1)"

cat > "$scratch/jobs.jsonl" <<JOBS
{"prompt": "a cat", "output_path": "$scratch/out/1.y4m"}
{"prompt": "a dog", "output_path": "$scratch/out/2.y4m"}
{"prompt": "a cow", "output_path": "$scratch/out/3.y4m"}
{"prompt": "a fox", "output_path": "$scratch/out/4.y4m"}
JOBS
# The template asks for a GPU and 16 cores; this node has neither, so the command line lowers them
# (sbatch's options override the script's #SBATCH lines).
cd "$scratch"
expect_exit 0 env LTX2_PROGRAM="$LTX2_BIN/ltx2-distilled" LTX2_CACHE_DIR="$scratch/cache" \
  timeout 300 sbatch --wait --array=0-1 --gres=none --cpus-per-task=1 \
  "$LTX2_SOURCE_DIR/scripts/slurm/render_array.sbatch" "$scratch/jobs.jsonl" "$scratch/manifests" \
  --height 64 --width 64 --num-frames 9 --no-audio
for n in 1 2 3 4; do [ -s "$scratch/out/$n.y4m" ] || fail "no output $n.y4m: $(cat "$scratch"/ltx2-batch-*.log 2>&1 | tail -5)"; done
for task in 0 1; do
  m="$scratch/manifests/task-$task.jsonl"
  [ "$(grep -c '"status":"done"' "$m" 2>/dev/null)" = 2 ] || fail "task $task's manifest: $(cat "$m" 2>&1)"
  grep -q "shard $task/2: 2 of the file's 4 jobs" "$scratch"/ltx2-batch-*_"$task".log ||
    fail "task $task ran another shard: $(cat "$scratch"/ltx2-batch-*_"$task".log 2>&1 | tail -3)"
done
cd /
munge_pid=$(cat "$cluster/munged.pid" 2>/dev/null)
teardown_check() {
  for pid in "${pids[@]}" $munge_pid; do kill -0 "$pid" 2>/dev/null && return 1; done
  return 0
}
kill "${pids[@]}" 2>/dev/null
munged --stop --socket="$cluster/munge.socket" >/dev/null 2>&1
for _ in $(seq 100); do teardown_check && break; sleep 0.1; done
teardown_check || fail "a Slurm or munge daemon is still running after the teardown"
finish
