#!/usr/bin/env bash
# Configures and builds ltx2 into build/ (Release). CUDA builds when nvcc is found; extra CMake
# arguments pass through (e.g. -DLTX2_ENABLE_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$jobs"
