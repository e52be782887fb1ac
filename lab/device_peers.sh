#!/usr/bin/env bash
# The peers' comparison on a GPU machine (docs/benchmarking.md, "Peers"): this tree's wheel,
# Humming installed from .peer-wheels and Marlin from .peer-marlin, then one kept run with both
# peers, SET = suite or generalization, and bench/bars.py over it. On a cold Humming cache
# (~/.humming/cache missing) a --quick run with both peers goes first and is not kept: Humming's
# background builds at import and its first compiles would otherwise share the host with the
# kept run's timed loops. Results come back as $OUT/peers_SET.tgz (the device tool returns 8
# files). Run from the repo root with .deps, .peer-wheels and .peer-marlin carried; set
# CHORD_BENCH_COMMIT=<hash> where the tree's git metadata is stale. The two sets do not fit one
# call of 600 s together: run `suite`, then `generalization` with SKIP_WHEEL=1 while the machine
# is still warm (the wheel and Humming's cache are still there).
#   [SKIP_WHEEL=1] lab/device_peers.sh suite|generalization [SECONDS]   (default budget 550 s)
# The bench gets what is left of SECONDS, then SIGTERM (it writes the rows done) and, 15 s later,
# SIGKILL; bars and the tarball take a few seconds after that, within the device tool's 600 s.
set -uo pipefail
set_name=${1:?usage: lab/device_peers.sh suite|generalization [SECONDS]}
budget=${2:-550}
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
# At least 1 s: timeout takes 0 as no limit and refuses a negative one.
left() { local l=$(( budget - $(elapsed) )); echo $(( l > 0 ? l : 1 )); }
out=${OUT:-/tmp/chord-out}
runs=$(mktemp -d /tmp/peers.XXXXXX)
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}" CHORD_CACHE_DIR=$runs/kernel-cache
if [[ -z ${SKIP_WHEEL:-} ]]; then
  python3 -m pip install -q --no-index --no-deps --target .peer-site .peer-wheels/*.whl > "$runs/peer_install.log" 2>&1 \
    || { echo "Humming's offline install failed:"; tail -5 "$runs/peer_install.log"; }
  scripts/install_wheel.sh "$runs/pip_install.log" > /dev/null 2>&1 || { tail -20 "$runs/pip_install.log"; exit 1; }
  echo "wheel at $(elapsed) s"
fi
if [[ ! -d ${HUMMING_CACHE_DIR:-$HOME/.humming/cache} ]]; then
  CHORD_CACHE_DIR=$runs/warm-cache PYTHONUNBUFFERED=1 timeout -k 15 "$(left)" python3 bench/bench_w4a16.py --quick \
    --peers marlin,humming --out "$runs/warm" > "$runs/warm.txt" 2>&1
  echo "warm-up run (not kept) rc=$? at $(elapsed) s"
fi
# shellcheck disable=SC2054  # one argument: the bench's comma-separated peer list
args=(--peers marlin,humming --out "$runs/$set_name")
[[ $set_name == generalization ]] && args+=(--set generalization)
PYTHONUNBUFFERED=1 timeout -k 15 "$(left)" python3 bench/bench_w4a16.py "${args[@]}" > "$runs/$set_name.txt" 2>&1
echo "$set_name rc=$? at $(elapsed) s"
python3 bench/bars.py "$runs/$set_name"/*.json --misses 20 --json "$runs/bars_$set_name.json" \
  > "$runs/bars_$set_name.txt" 2>&1 && head -4 "$runs/bars_$set_name.txt"
rm -rf "$runs/kernel-cache" "$runs/warm-cache"
tar -czf "$out/peers_$set_name.tgz" -C "$runs" .
