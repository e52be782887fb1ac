#!/usr/bin/env bash
# GPU pytest on a machine with torch, nanobind and scikit-build-core installed and no
# network: builds and installs the wheel (scripts/install_wheel.sh), then runs tests/python.
# Logs and overhead.json go to $OUT (default /tmp/chord-py-out).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-/tmp/chord-py-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: pytest runs from /tmp below
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
export CHORD_CACHE_DIR=${CHORD_CACHE_DIR:-/tmp/chord-cache}
scripts/install_wheel.sh "$out/pip_install.log" || exit 1
# Wheels that scripts/gpu-wheels.sh downloaded (the `kernels` package), installed offline.
if [ -d .wheels ]; then
  python3 -m pip install --no-index --find-links .wheels kernels > "$out/pip_wheels.log" 2>&1 \
    || { echo "offline install of .wheels failed (its tests will skip):"; tail -5 "$out/pip_wheels.log"; }
fi
# bitsandbytes for the NF4 comparisons with its CUDA kernels (scripts/reference-bnb.sh).
if [ -d .bnb-site ]; then export PYTHONPATH="$PWD/.bnb-site${PYTHONPATH:+:$PYTHONPATH}"; fi
export CHORD_PYTEST_OUT="$out"
# One worker process when pytest-xdist is there: a test that crashes the process is
# reported as failed and the rest still run.
isolate=()
python3 -c "import xdist" 2>/dev/null && isolate=(-n 1)
cd /tmp && python3 -m pytest -v -rA -p no:cacheprovider "${isolate[@]}" "$OLDPWD/tests/python" 2>&1 \
  | tee "$out/pytest.log" | tail -60
exit "${PIPESTATUS[0]}"
