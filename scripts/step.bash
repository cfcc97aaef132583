# step NAME CMD...: runs one command of a GPU-machine script (gpu_e2e.sh, gpu_multi.sh) with its
# output in $out/NAME.log, prints the log's tail and the exit status; a failure is reported and the
# script goes on with its next step. Sourced; $out is the caller's results folder.
step() {
  local name=$1; shift
  echo "== $name: $*"
  local start=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$out/$name.log"
  echo "== $name: exit $rc after $((SECONDS - start)) s"
}
