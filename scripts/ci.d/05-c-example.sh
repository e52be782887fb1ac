#!/usr/bin/env bash
# CI step: builds examples/c_api_example.c outside CMake with README.md's own build line
# (against the build/ that scripts/test.sh made) and runs it: exit 0 and "OK" on a GPU;
# without one, exit 77 and the message that says so. Fails on anything else, or when the
# README has no such line.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -d .deps/usr ]; then export LD_LIBRARY_PATH="$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"; fi
build_line=$(sed -n '/^cc examples\/c_api_example\.c/,/[^\\]$/p' README.md)
if [ -z "$build_line" ]; then
  echo "c example: README.md has no 'cc examples/c_api_example.c ...' line" >&2
  exit 1
fi
echo "$build_line"
bash -euc "$build_line"
set +e
output=$(build/c_api_example 2>&1)
status=$?
set -e
echo "$output"
case $status in
  0) expected='^OK$' ;;
  77) expected='^c_api_example: no CUDA GPU to run on (.*); the checks that need none passed$' ;;
  *) echo "c example: FAILED (exit $status)" >&2; exit 1 ;;
esac
if ! grep -q "$expected" <<<"$output"; then
  echo "c example: FAILED: exit $status without the line /$expected/" >&2
  exit 1
fi
echo "c example: exit $status as expected"
