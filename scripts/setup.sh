#!/usr/bin/env bash
# Installs every system dependency of ltx2 from the distribution's packages. Idempotent: packages
# already present are left alone, and apt is only asked when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev catch2
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev libx264-dev ffmpeg
  libsentencepiece-dev sentencepiece
  libomp-dev libpng-dev
  clang
  munge slurmctld slurmd slurm-client
  openmpi-bin libopenmpi-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
