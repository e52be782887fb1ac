#!/usr/bin/env bash
# The main job: set up, build, and precompile every kernel of a kernel set into the disk
# cache (works without a GPU). Usage: scripts/main.sh [ARCH] [KERNEL_SET]  (sm_90a, all)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/chord info
build/chord precompile --arch "${1:-sm_90a}" --profile "${2:-all}"
