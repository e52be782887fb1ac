#!/usr/bin/env bash
# Builds (if needed) and runs every test: CPU tests everywhere; GPU tests run where a GPU
# is visible and are reported as skipped otherwise, each with the reason it printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -d .deps/usr ]; then export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"; fi
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@" | tee "$summary"
# ctest names a skipped test (exit 77) but not what it printed: show the last line of each
# one's output, where the tests say why they skipped.
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$summary")
if [ -n "$skipped" ]; then
  echo "Skipped, and why:"
  awk -v names="$skipped" '
    BEGIN { n = split(names, list, "\n"); for (i = 1; i <= n; ++i) wanted[list[i]] = 1 }
    /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); next }
    /^<end of output>$/ { inside = 0; next }
    inside && (name in wanted) && NF { reason[name] = $0 }
    /^Output:$/ { getline; inside = 1 }
    END { for (i = 1; i <= n; ++i) print "  " list[i] ": " (list[i] in reason ? reason[list[i]] : "(no output)") }
  ' build/Testing/Temporary/LastTest.log
fi
