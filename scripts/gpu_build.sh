#!/usr/bin/env bash
# Configures and builds ltx2 with the CUDA backend on a GPU machine, then (with --test) runs the GPU
# tests (ctest label `gpu`) and the CPU unit tests. Prints what the machine has first, so a missing
# dependency is named before CMake fails on it. Extra arguments pass through to CMake.
# --test-labels REGEX runs only the tests of those ctest labels (default gpu|unit): the whole suite
# takes some 9 minutes with the build on an H200, so a device call of at most 10 minutes may run it
# as two (`--test-labels gpu`, then `--test-labels unit` on the still-warm machine, which builds
# nothing again).
# Usage: scripts/gpu_build.sh [--test] [--test-labels REGEX] [--build-dir DIR] [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

run_tests=0
test_labels="gpu|unit"
build_dir=build
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --test) run_tests=1 ;;
    --test-labels) run_tests=1; test_labels="$2"; shift ;;
    --build-dir) build_dir="$2"; shift ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
  echo "nvidia-smi: no GPU visible"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
for tool in nvcc cmake g++ ninja pkg-config; do
  if command -v "$tool" >/dev/null; then
    echo "$tool: $("$tool" --version 2>&1 | grep -m1 -Eo '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -1)"
  else
    echo "$tool: missing"
  fi
done
for pc in sentencepiece libpng libavformat; do
  echo "pkg-config $pc: $(pkg-config --modversion "$pc" 2>/dev/null || echo missing)"
done
for header in spdlog/spdlog.h fmt/core.h CLI/CLI.hpp nlohmann/json.hpp catch2/catch_test_macros.hpp \
              cudnn.h nccl.h; do
  found=$(find /usr/include /usr/local/include /usr/local/cuda/include -path "*/$header" 2>/dev/null |
          head -1)
  echo "header $header: ${found:-missing}"
done

echo "== configure ($build_dir)"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ -f "$build_dir/CMakeCache.txt" ] && ! grep -q "CMAKE_GENERATOR:INTERNAL=${generator[1]:-Unix Makefiles}" \
     "$build_dir/CMakeCache.txt"; then
  generator=()  # keep the generator the folder was configured with
fi
log="$build_dir/configure.log"
mkdir -p "$build_dir"
if ! cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" "${cmake_args[@]}" >"$log" 2>&1; then
  cat "$log"
  exit 1
fi
grep "ltx2:" "$log"
echo "== build"
# Keep going past a failing target, so that one run names every compile error.
keep_going=-k
grep -q "CMAKE_GENERATOR:INTERNAL=Ninja" "$build_dir/CMakeCache.txt" && keep_going="-k 0"
# shellcheck disable=SC2086
cmake --build "$build_dir" -j "$(nproc)" -- $keep_going

if [ "$run_tests" = 1 ]; then
  echo "== tests"
  # The multi-GPU tests (label multigpu) need two GPUs or more.
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true)
  exclude=()
  if [ "${gpus:-0}" -lt 2 ]; then
    echo "($gpus GPU visible: the multigpu tests are left out)"
    exclude=(-LE multigpu)
  fi
  (cd "$build_dir" && ctest -j "$(nproc)" --output-on-failure -L "$test_labels" "${exclude[@]}")
fi
