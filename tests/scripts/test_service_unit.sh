#!/usr/bin/env bash
# systemd/loadwatch.service as `cmake --install` lays it out: `systemd-analyze verify` without a
# single warning, `systemd-analyze security --offline` exposure <= 3.0, the settings the service
# needs (and nothing that hides processes), the sysusers entry, and prefix-relative paths.
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LOADWATCH_BUILD_DIR:-$src/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

install_root() {  # $1 = root dir, $2 = prefix
  DESTDIR=$1 cmake --install "$build" --prefix "$2" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; exit 1; }
  # verify --root resolves everything inside the root: /bin/kill (ExecReload) and systemd's
  # own units (sysinit.target, network-online.target, ...).
  mkdir -p "$1/bin" "$1/usr/lib/systemd/system"
  cp /bin/kill "$1/bin/"
  cp -an /usr/lib/systemd/system/. "$1/usr/lib/systemd/system/"
}

root=$tmp/usr-root
install_root "$root" /usr
unit=$root/usr/lib/systemd/system/loadwatch.service
[ -f "$unit" ] || { echo "FAIL: no unit at $unit"; exit 1; }
cmp -s "$unit" "$src/systemd/loadwatch.service" && ok "installed unit = systemd/loadwatch.service" ||
  fail "the /usr install changed the unit"

out=$(systemd-analyze verify --root="$root" loadwatch.service 2>&1) && [ -z "$out" ] &&
  ok "systemd-analyze verify: clean" || fail "systemd-analyze verify: $out"

score_of() { sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'; }
for what in "$src/systemd/loadwatch.service" "--root=$root loadwatch.service"; do
  # shellcheck disable=SC2086
  score=$(systemd-analyze security --offline=true $what 2>&1 | score_of)
  if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }'; then
    ok "systemd-analyze security --offline=true $what: exposure $score"
  else
    fail "exposure '$score' > 3.0 for $what"
  fi
done

# What the service needs, literally.
for want in 'Type=notify' 'WatchdogSec=' 'ExecReload=/bin/kill -HUP $MAINPID' \
  'EnvironmentFile=-/etc/default/loadwatch' '--config.file=/etc/loadwatch/loadwatch.yml' \
  'User=loadwatch' 'AmbientCapabilities=CAP_DAC_READ_SEARCH CAP_SYS_PTRACE' \
  'CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_SYS_PTRACE' \
  'ProtectSystem=strict' 'ProtectHome=yes' 'NoNewPrivileges=yes' 'PrivateTmp=yes' \
  'ProtectKernelTunables=yes' 'ProtectKernelModules=yes' 'ProtectKernelLogs=yes' \
  'ProtectControlGroups=yes' 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK' \
  'SystemCallFilter=@system-service' 'SystemCallArchitectures=native' \
  'MemoryDenyWriteExecute=yes' 'LockPersonality=yes' \
  'StateDirectory=loadwatch' '--storage.path=/var/lib/loadwatch'; do
  grep -qF -- "$want" "$unit" && ok "has $want" || fail "missing $want"
done
# Nothing that hides processes or their /proc files from loadwatch.
if grep -E '^(ProtectProc=(invisible|ptraceable|noaccess)|ProcSubset=pid|PrivateUsers=(yes|true|1)|PrivatePIDs=)' "$unit"; then
  fail "the unit hides processes"
else
  ok "nothing hides processes"
fi

# The user the unit runs as: systemd-sysusers would create it from the installed entry.
out=$(systemd-sysusers --root="$root" --dry-run 2>&1 || true)
echo "$out" | grep -q "Creating user 'loadwatch'" && ok "sysusers creates the loadwatch user" ||
  fail "sysusers: $out"

# /etc files and the default flags file.
[ -f "$root/etc/loadwatch/loadwatch.yml" ] && ok "/etc/loadwatch/loadwatch.yml" || fail "no config"
grep -q '^LOADWATCH_ARGS=' "$root/etc/default/loadwatch" && ok "/etc/default/loadwatch" ||
  fail "no /etc/default/loadwatch"
"$root/usr/bin/loadwatch" --config.file="$root/etc/loadwatch/loadwatch.yml" --config.check >/dev/null &&
  ok "the installed default config passes --config.check" || fail "default config rejected"

# Another prefix: the unit's paths follow it, and it still verifies.
root2=$tmp/local-root
install_root "$root2" /usr/local
unit2=$root2/usr/local/lib/systemd/system/loadwatch.service
for want in 'ExecStart=/usr/local/bin/loadwatch --config.file=/usr/local/etc/loadwatch/loadwatch.yml' \
  'EnvironmentFile=-/usr/local/etc/default/loadwatch'; do
  grep -qF -- "$want" "$unit2" && ok "/usr/local: $want" || fail "/usr/local: missing $want"
done
[ -f "$root2/usr/local/etc/loadwatch/loadwatch.yml" ] && ok "/usr/local/etc/loadwatch/loadwatch.yml" ||
  fail "no /usr/local/etc config"
out=$(systemd-analyze verify --root="$root2" loadwatch.service 2>&1) && [ -z "$out" ] &&
  ok "/usr/local: systemd-analyze verify: clean" || fail "/usr/local: verify: $out"

if [ "$fails" -gt 0 ]; then
  echo "$fails failed"
  exit 1
fi
echo "all service unit checks passed"
