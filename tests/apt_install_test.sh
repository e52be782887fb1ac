#!/usr/bin/env bash
# scripts/apt-install.sh against a fake apt-get and sudo on PATH: it waits while the lock is
# held and then succeeds, gives up at its deadline, and shows apt-get's output on failure.
# Usage: apt_install_test.sh REPO_ROOT
set -euo pipefail
script="$1/scripts/apt-install.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The fake apt-get fails with a lock error while $work/locked counts down (-1: forever), then
# answers as $work/answer says; every call is logged.
cat > "$work/bin/apt-get" <<'FAKE'
#!/usr/bin/env bash
echo "$*" >> "$FAKE_DIR/calls"
left=$(cat "$FAKE_DIR/locked")
if [ "$left" != 0 ]; then
  [ "$left" = -1 ] || echo $((left - 1)) > "$FAKE_DIR/locked"
  echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
  exit 100
fi
if [ "$(cat "$FAKE_DIR/answer")" = missing ] && [ "$2" = install ]; then
  echo "E: Unable to locate package nosuchpackage" >&2
  exit 100
fi
FAKE
printf '#!/bin/sh\nexec "$@"\n' > "$work/bin/sudo"
chmod +x "$work/bin/apt-get" "$work/bin/sudo"
export PATH="$work/bin:$PATH" FAKE_DIR="$work"

fail() { echo "FAILED: $*"; echo "--- output:"; cat "$work/out"; exit 1; }
run() {  # run LOCKED ANSWER WAIT_S: the script's exit status, its output in $work/out
  echo "$1" > "$work/locked"; echo "$2" > "$work/answer"; : > "$work/calls"
  set +e
  APT_LOCK_WAIT_S=$3 "$script" pkg-a pkg-b > "$work/out" 2>&1
  status=$?
  set -e
}

run 2 ok 60
[ "$status" = 0 ] || fail "lock held for two calls: exit $status, expected 0"
grep -q "apt-install: installing pkg-a pkg-b" "$work/out" || fail "does not say what it installs"
grep -q "holds its lock; waiting" "$work/out" || fail "does not say that it waits for the lock"
[ "$(grep -c . "$work/calls")" = 4 ] || fail "expected 4 apt-get calls (2 locked, update, install), got $(cat "$work/calls")"
grep -q "^-q install -y pkg-a pkg-b$" "$work/calls" || fail "no install call: $(cat "$work/calls")"

run -1 ok 3
[ "$status" = 100 ] || fail "lock held forever: exit $status, expected apt-get's 100 after the deadline"
grep -q "Could not get lock" "$work/out" || fail "apt-get's lock error is not shown"

run 0 missing 60
[ "$status" = 100 ] || fail "unknown package: exit $status, expected 100"
grep -q "E: Unable to locate package nosuchpackage" "$work/out" || fail "apt-get's error is not shown"
[ "$(grep -c . "$work/calls")" = 2 ] || fail "a failure that is not the lock is retried: $(cat "$work/calls")"
echo "apt-install: waits for the lock, gives up at its deadline, shows apt-get's errors"
