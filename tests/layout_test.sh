#!/usr/bin/env bash
# The library's folders stand on floors (docs/architecture.md, "Folders, floor by floor"):
# a file includes its own folder or a folder on a lower floor, never one beside it or above
# it. Lists every include that breaks this and fails if there is one.
# Usage: layout_test.sh REPO_ROOT
set -euo pipefail
cd "$1"
# folder floor (chord/ is include/chord/, the C API)
floors="chord 0
kernels_src 0
core 1
jit 2
cache 2
launcher 2
runtime 3
tuning_tables 3
ops 4
precompile 4
bindings 5"
bad=$(grep -rnE '^#include "[a-z_]+/' core jit cache launcher runtime tuning_tables ops precompile bindings \
        --include='*.cpp' --include='*.hpp' --include='*.cuh' |
      awk -v floors="$floors" '
        BEGIN { n = split(floors, rows, "\n"); for (i = 1; i <= n; ++i) { split(rows[i], f, " "); floor[f[1]] = f[2] } }
        {
          split($0, at, ":"); from = at[1]; sub(/\/.*/, "", from)
          to = $0; sub(/^[^"]*"/, "", to); sub(/\/.*/, "", to)
          if (!(to in floor) || to == from) next
          if (floor[to] >= floor[from]) print "  " at[1] ":" at[2] " (" from ", floor " floor[from] ") includes " to "/ (floor " floor[to] ")"
        }')
if [ -n "$bad" ]; then
  echo "includes that do not go down a floor:"
  echo "$bad"
  exit 1
fi
echo "layout: every include of the library goes to its own folder or a lower floor"
