#!/usr/bin/env bash
# Configures and builds ltx2 into build/ (Release); extra CMake arguments pass through.
# CUDA: a first configure builds the CUDA backend when nvcc is found and a GPU is visible; on a
# machine with no GPU it leaves it out (the kernels take half the build and could not run there)
# unless -DLTX2_ENABLE_CUDA=ON asks for it; a configured build/ keeps its choice until told
# otherwise (-DLTX2_ENABLE_CUDA=ON|OFF).
# `--target NAME` (repeatable) builds only those targets and what they need, e.g.
# `--target ltx2-distilled` for a first video without compiling the test suite; without it
# everything builds.
# Usage: scripts/build.sh [--target NAME]... [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
targets=()
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets+=(--target "$2"); shift ;;
    *) cmake_args+=("$1") ;;
  esac
  shift
done
if [ ! -f build/CMakeCache.txt ] && ! printf '%s\n' "${cmake_args[@]}" | grep -q '^-DLTX2_ENABLE_CUDA=' &&
   ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "build.sh: no GPU visible: building without the CUDA backend (-DLTX2_ENABLE_CUDA=ON builds it)"
  cmake_args+=(-DLTX2_ENABLE_CUDA=OFF)
fi
# Ninja overlaps the programs' compiles with the library's last files and link (make waits for the
# whole library); a folder configured with make keeps it.
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then
  cmake_args=(-G Ninja "${cmake_args[@]}")
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >/dev/null
cmake --build build -j "$jobs" "${targets[@]}"
