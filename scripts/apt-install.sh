#!/usr/bin/env bash
# Installs Debian packages: apt-get update, then apt-get install of the packages named.
# Says what it installs; while another apt or dpkg holds its lock, waits and tries again,
# up to APT_LOCK_WAIT_S seconds (default 300) in all; when apt-get fails, prints its output
# and exits with its status. Runs apt-get through sudo unless root.
# Usage: scripts/apt-install.sh PACKAGE...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
deadline=$((SECONDS + ${APT_LOCK_WAIT_S:-300}))
sudo_cmd=()
[ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

apt_get() {
  local waiting=""
  while :; do
    if "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q "$@" >"$log" 2>&1; then
      return 0
    else
      local status=$?
    fi
    if grep -q -e "Could not get lock" -e "Unable to lock" "$log" && [ "$SECONDS" -lt "$deadline" ]; then
      [ -n "$waiting" ] || echo "apt-install: another apt or dpkg holds its lock; waiting (until $((deadline - SECONDS)) s from now)"
      waiting=1
      sleep 2
      continue
    fi
    echo "apt-install: apt-get $* failed (exit $status):" >&2
    cat "$log" >&2
    exit "$status"
  done
}

echo "apt-install: installing $*"
apt_get update
apt_get install -y "$@"
