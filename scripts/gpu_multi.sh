#!/usr/bin/env bash
# The multi-GPU measurements of issue 22 on a lent machine with several GPUs, in as few device calls
# as possible (the machines are lent rarely and for minutes). Needs build/ from scripts/gpu_build.sh;
# set NCCL_NVLS_ENABLE=0 (the lent machines' NVLink multicast is off limits).
#
# Usage: scripts/gpu_multi.sh STEP... (in order; each step's log and JSON go to $LTX2_MULTI_OUT,
# default ./multi-results; a failing step is reported and the next one runs)
#   suite     ctest label multigpu: the NCCL Communicator suite, the fleet failure tests with real
#             NCCL, rank groups over NCCL, SP equal to one GPU on the golden transformer cases
#   a2a       ltx2 bench sp --all-to-all on every GPU, NCCL as it comes and under each setting of
#             $LTX2_MULTI_NCCL_TUNINGS (space-separated VAR=VALUE[,VAR=VALUE...] sets)
#   scaling   ltx2 bench scaling --model 19b at both shapes on 1, 2, 4, 8 GPUs (as many as there are)
#   e2e       the distilled and ti2vid jobs at 1024x1536x121 on 1, 2, 4, 8 GPUs (scripts/gpu_e2e.sh
#             make gpus: random weights in the published layouts)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/bin
out=${LTX2_MULTI_OUT:-multi-results}
mkdir -p "$out"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | paste -sd, -)
[ -n "$gpus" ] || { echo "gpu_multi.sh: no GPU visible"; exit 1; }
tunings=${LTX2_MULTI_NCCL_TUNINGS:-"NCCL_MIN_NCHANNELS=32 NCCL_BUFFSIZE=16777216 NCCL_P2P_NVL_CHUNKSIZE=1048576"}

source scripts/step.bash

echo "== GPUs $gpus; NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-unset}"
for s in "$@"; do
  case "$s" in
    suite) step suite ctest --test-dir build -L multigpu --output-on-failure ;;
    a2a)
      step a2a-default "$bin/ltx2" bench sp --all-to-all --gpus "$gpus" --json "$out/a2a-default.json"
      for t in $tunings; do
        step "a2a-$t" env ${t//,/ } "$bin/ltx2" bench sp --all-to-all --gpus "$gpus" --json "$out/a2a-$t.json"
      done
      ;;
    scaling)
      step scaling "$bin/ltx2" bench scaling --model 19b --shape stage1 full --gpus "$gpus" --json "$out/scaling.json"
      ;;
    e2e) LTX2_E2E_OUT="$out/e2e" step e2e scripts/gpu_e2e.sh make gpus ;;
    *) echo "gpu_multi.sh: unknown step '$s' (suite, a2a, scaling, e2e)"; exit 2 ;;
  esac
done
