#!/usr/bin/env bash
# Configures and builds ltx2 into build/ (Release). CUDA builds when nvcc is found; extra CMake
# arguments pass through (e.g. -DLTX2_ENABLE_CUDA=OFF). `--target NAME` (repeatable) builds only
# those targets and what they need, e.g. `--target ltx2-distilled` for a first video without
# compiling the test suite; without it everything builds.
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
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >/dev/null
cmake --build build -j "$jobs" "${targets[@]}"
