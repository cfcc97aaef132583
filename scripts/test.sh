#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test that needs no GPU (ctest -LE gpu), then the
# bounded fuzz run of the safetensors header parser. This is the README's test command and CI's.
# The CUDA backend is compiled whenever nvcc is found, GPU or not, so that its code is checked here
# too (build.sh alone leaves it out on a machine with no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
bash scripts/setup.sh
bash scripts/build.sh -DLTX2_ENABLE_CUDA=ON
(cd build && ctest -j "$jobs" --output-on-failure -LE gpu)
bash scripts/fuzz.sh 45
