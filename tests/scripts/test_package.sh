#!/usr/bin/env bash
# The .deb: CPack builds it from the build dir; lintian finds no error and no warning in it;
# its control file names the Debian packages of every library the binary loads; it holds the
# files in FHS places, a DEP-5 copyright, a Debian changelog made from CHANGELOG.md and a man
# page naming every flag of --help. dpkg installs, upgrades, removes and purges it in a scratch
# root (dpkg --root, scripts run with DPKG_ROOT): the user, the conffiles and the unit's
# enablement are checked there. The maintainer scripts' calls to systemctl and the debhelper
# tools are checked with logging stand-ins, with and without a running systemd. Extracted into
# a scratch root (dpkg -x), the installed binary runs (--version) and serves TLS with the
# system's OpenSSL 3 (libssl3), nothing of libssl-dev's.
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LOADWATCH_BUILD_DIR:-$src/build}
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
skips=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# cpack writes into its own directory (-B), so the build dir only gains CPack's config.
(cd "$build" && cpack -G DEB -B "$tmp/pkg") >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/pkg/loadwatch_*.deb)
ok "cpack built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# --- lintian -------------------------------------------------------------------------------
# No error and no warning; info and pedantic tags are not failures (lintian's own default is
# to fail on errors only).
if lintian --fail-on error,warning "$deb" >"$tmp/lintian.log" 2>&1; then
  ok "lintian: no errors or warnings"
else
  fail "lintian:"; grep -v 'running with root privileges' "$tmp/lintian.log"
fi

# --- control file --------------------------------------------------------------------------
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = loadwatch ] && ok "Package: loadwatch" || fail "Package: $(field Package)"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] && ok "Architecture: $(field Architecture)" ||
  fail "Architecture: $(field Architecture)"
depends=$(field Depends)
echo "Depends: $depends"
dpkg-deb -I "$deb" >"$tmp/info"
for f in conffiles postinst prerm postrm; do
  grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\*? +$f" "$tmp/info" && ok "control member $f" || fail "no $f"
done
dpkg-deb -e "$deb" "$tmp/control"
[ "$(sort "$tmp/control/conffiles")" = "$(printf '/etc/default/loadwatch\n/etc/loadwatch/loadwatch.yml')" ] &&
  ok "conffiles: /etc/default/loadwatch, /etc/loadwatch/loadwatch.yml" || fail "conffiles: $(cat "$tmp/control/conffiles")"
for s in postinst prerm postrm; do
  sh -n "$tmp/control/$s" && [ -x "$tmp/control/$s" ] && ok "$s is an executable sh script" || fail "$s"
done

# --- contents ------------------------------------------------------------------------------
dpkg-deb -c "$deb" | awk '{print $6}' >"$tmp/contents"
for want in ./usr/bin/loadwatch ./usr/lib/systemd/system/loadwatch.service \
  ./usr/lib/sysusers.d/loadwatch.conf ./etc/loadwatch/loadwatch.yml ./etc/default/loadwatch \
  ./usr/share/doc/loadwatch/service.md ./usr/share/doc/loadwatch/examples/web-config.example.yml \
  ./usr/share/loadwatch/rules/loadwatch.rules.yml ./usr/share/loadwatch/rules/loadwatch.alerts.yml \
  ./usr/share/doc/loadwatch/copyright ./usr/share/doc/loadwatch/changelog.gz \
  ./usr/share/man/man1/loadwatch.1.gz; do
  grep -qxF "$want" "$tmp/contents" && ok "contains $want" || fail "missing $want"
done
n=$(grep -c '^./usr/share/loadwatch/dashboards/.*\.json$' "$tmp/contents" || true)
[ "$n" -ge 1 ] && ok "$n dashboards in /usr/share/loadwatch/dashboards" || fail "no dashboards"
if grep -v '/$' "$tmp/contents" | grep -vE '^\./(usr/(bin|lib|share)|etc)/'; then
  fail "files outside /usr/{bin,lib,share} and /etc"
else
  ok "every file in an FHS place"
fi

# --- installed into a scratch root ---------------------------------------------------------
root=$tmp/root
dpkg -x "$deb" "$root"
bin=$root/usr/bin/loadwatch
version=$("$bin" --version)
echo "$version" | grep -qE '^loadwatch, version [0-9]+\.[0-9]+\.[0-9]+ \(revision: [^,]+, build date: [^)]+\)$' &&
  ok "installed binary: $version" || fail "--version: $version"
readelf -S "$bin" | grep -q '\.symtab' && fail "binary not stripped" || ok "binary is stripped"
readelf -d "$bin" | grep -qiE 'R(UN)?PATH' && fail "RUNPATH: $(readelf -d "$bin" | grep -i path)" ||
  ok "no RUNPATH: every library from the system"

# Every library the installed binary needs comes from a package named in Depends (or the
# package itself).
missing=0
while read -r lib path; do
  case "$path" in "$root"/*) continue ;; esac
  pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [ -n "$pkg" ] || pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1 || true)
  if ! echo "$depends" | tr ',' '\n' | sed 's/(.*//; s/ //g' | grep -qxF "$pkg"; then
    fail "NEEDED $lib ($path, package '$pkg') not in Depends"
    missing=1
  fi
done < <(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r lib; do
  echo "$lib $(ldd "$bin" | awk -v l="$lib" '$1 == l {print $3}')"
done)
[ "$missing" = 0 ] && ok "Depends covers every NEEDED library"

# TLS through the packaged binary, on the system's OpenSSL 3.
(cd "$tmp" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 -keyout tls.key -out tls.crt) >/dev/null 2>&1
printf 'tls_server_config: {cert_file: tls.crt, key_file: tls.key}\n' >"$tmp/web.yml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# LD_DEBUG=files logs every file the dynamic loader opens: never libssl-dev's unversioned
# libssl.so, which a host without libssl-dev lacks.
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" \
  "$bin" --web.listen-address=127.0.0.1:"$port" --web.config.file="$tmp/web.yml" \
  --config.file="$root/etc/loadwatch/loadwatch.yml" >"$tmp/lw.log" 2>&1 &
pid=$!
code=000
for _ in $(seq 1 100); do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$tmp/tls.crt" \
    "https://127.0.0.1:$port/-/healthy" || true)
  [ "$code" = 200 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ "$code" = 200 ] && ok "the installed binary serves HTTPS" || { fail "HTTPS: $code"; cat "$tmp/lw.log"; }
grep -q "libssl.so.3" "/proc/$pid/maps" 2>/dev/null &&
  ok "and has the system's libssl.so.3 mapped" || fail "libssl.so.3 not mapped"
if cat "$tmp"/ld.* | grep -E 'file=lib(ssl|crypto)\.so \[0\]'; then
  fail "an unversioned libssl.so/libcrypto.so was opened"
else
  ok "TLS runs on the versioned OpenSSL 3 libraries only"
fi
kill "$pid"
wait "$pid" && ok "clean exit on SIGTERM" || fail "exit code $?"
pid=

# --- copyright, changelog, man page ---------------------------------------------------------
doc=$root/usr/share/doc/loadwatch
# LICENSE is Apache-2.0 word for word (as Debian ships it), with the project's copyright line.
holder=$(sed -n 's/^   Copyright \([0-9].*\)$/\1/p' "$src/LICENSE")
if [ -n "$holder" ] &&
  diff <(sed "s/^   Copyright $holder\$/   Copyright [yyyy] [name of copyright owner]/" "$src/LICENSE") \
    /usr/share/common-licenses/Apache-2.0 >/dev/null; then
  ok "LICENSE: Apache-2.0, Copyright $holder"
else
  fail "LICENSE is not the Apache-2.0 text with one copyright line"
fi
# DEP-5: the header, then the Files: * paragraph with LICENSE's holder and licence.
head -1 "$doc/copyright" | grep -qxF 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' &&
  ok "copyright: DEP-5 header" || fail "copyright: $(head -1 "$doc/copyright")"
paragraph() { awk -v want="Files: $1" '$0 == want {p = 1} p && /^$/ {exit} p' "$doc/copyright"; }
paragraph '*' | grep -qxF "Copyright: $holder" && paragraph '*' | grep -qxF 'License: Apache-2.0' &&
  ok "copyright: Files: * is LICENSE's ($holder, Apache-2.0)" || fail "copyright: Files: * $(paragraph '*')"
grep -qF '/usr/share/common-licenses/Apache-2.0' "$doc/copyright" &&
  ok "copyright: Apache-2.0 refers to /usr/share/common-licenses" || fail "copyright: no common-licenses reference"
paragraph 'third_party/uplot/*' | grep -qxF 'License: Expat' &&
  grep -qF 'Permission is hereby granted, free of charge' "$doc/copyright" &&
  ok "copyright: third_party/uplot/* under Expat, with its text" || fail "copyright: no uplot paragraph"
# Every licence named in a Files paragraph has a paragraph of its own, with its text.
awk '/^License: / && prev == "" {print $2} {prev = $0}' "$doc/copyright" | sort >"$tmp/license-texts"
for lic in $(sed -n 's/^License: //p' "$doc/copyright" | sort -u); do
  grep -qxF "$lic" "$tmp/license-texts" || fail "copyright: no paragraph with the text of $lic"
done

# changelog.gz: Debian's format (the version has no Debian revision), made from CHANGELOG.md.
file -L "$doc/changelog.gz" | grep -q 'max compression' && ok "changelog.gz: gzip -9" ||
  fail "changelog.gz: $(file -L "$doc/changelog.gz")"
zcat "$doc/changelog.gz" >"$tmp/changelog"
[ "$(dpkg-parsechangelog -l "$tmp/changelog" -S Version)" = "$(field Version)" ] &&
  ok "changelog: newest entry is $(field Version)" || fail "changelog: $(head -1 "$tmp/changelog")"
tags() { grep -oE '\[(CHANGE|FEATURE|ENHANCEMENT|BUGFIX|SECURITY)\]' "$1" | sort | uniq -c; }
[ -n "$(tags "$tmp/changelog")" ] && [ "$(tags "$src/CHANGELOG.md")" = "$(tags "$tmp/changelog")" ] &&
  ok "changelog: every CHANGELOG.md item ($(tags "$tmp/changelog" | awk '{n += $1} END {print n}'))" ||
  fail "changelog: items differ from CHANGELOG.md"

# The man page: gzip -9, the sections --help lacks, every flag and subcommand --help prints,
# and every flag of each subcommand's --help.
man=$root/usr/share/man/man1/loadwatch.1.gz
file -L "$man" | grep -q 'max compression' && ok "loadwatch.1.gz: gzip -9" || fail "man: $(file -L "$man")"
as_text() { zcat "$1" | sed 's/\\f[BIRP]//g; s/\\-/-/g; s/\\[,/&]//g; s/\\e/\\/g'; }
as_text "$man" >"$tmp/man.txt"
for section in NAME SYNOPSIS DESCRIPTION OPTIONS '"CONFIGURATION FILE"' SIGNALS '"EXIT STATUS"' FILES \
  EXAMPLES '"SEE ALSO"'; do
  grep -qxF ".SH $section" "$tmp/man.txt" || fail "man page: no section $section"
done
for word in /etc/loadwatch/loadwatch.yml /etc/default/loadwatch SIGHUP SIGTERM SIGINT; do
  grep -qF "$word" "$tmp/man.txt" || fail "man page does not mention $word"
done
flags_of() { grep -oE -- '(^|[ ,])--?[a-z][a-z0-9.-]*' "$1" | sed 's/^[ ,]//' | sort -u; }
# covers BINARY MANTEXT: every flag and subcommand of BINARY's --help, and every flag of each
# subcommand's --help, is in MANTEXT; counts them in $covered.
covers() {
  local binary=$1 text=$2 name flag
  local -a words
  covered=0
  "$binary" --help >"$tmp/help.txt"
  flags_of "$tmp/help.txt" | sed 's/^/loadwatch /' >"$tmp/flags"
  for name in $(sed -n '/^Subcommands/,$ s/^  \([a-z][a-z0-9-]*\)  .*/\1/p' "$tmp/help.txt"); do
    covered=$((covered + 1))
    grep -qxF ".SS \"loadwatch $name\"" "$text" || fail "man page: no subsection for loadwatch $name"
    "$binary" "$name" --help >"$tmp/subcommand.txt"
    flags_of "$tmp/subcommand.txt" | sed "s/^/loadwatch $name /" >>"$tmp/flags"
  done
  while read -r -a words; do
    flag=${words[${#words[@]} - 1]}
    covered=$((covered + 1))
    grep -qE -- "(^|[^a-z0-9.-])$flag([^a-z0-9.-]|\$)" "$text" || fail "man page lacks ${words[*]}"
  done <"$tmp/flags"
}
covers "$bin" "$tmp/man.txt"
[ "$covered" -ge 40 ] && ok "man page names all $covered flags (and subcommands) of --help" ||
  fail "only $covered flags in --help"
# The page's SUBCOMMANDS section, made with a stand-in loadwatch that has one subcommand.
mkdir -p "$tmp/stand-in"
cat >"$tmp/stand-in/loadwatch" <<EOF
#!/bin/sh
case "\$*" in
  --help) "$bin" --help; printf '\nSubcommands (loadwatch NAME --help for each):\n  report  Summarise a run\n' ;;
  "report --help") printf 'Summarise a run\nUsage: loadwatch report [OPTIONS]\n\nOptions:\n'
    printf '  -h,--help    Print this help message and exit\n  --prometheus.url TEXT  Prometheus to query\n'
    printf '.a line starting with a dot\n' ;;
  *) exec "$bin" "\$@" ;;
esac
EOF
chmod +x "$tmp/stand-in/loadwatch"
sh "$src/packaging/man/build.sh" help2man "$tmp/stand-in/loadwatch" "$src/packaging/man/loadwatch.h2m" \
  "$(field Version)" "$tmp/stand-in/loadwatch.1.gz"
as_text "$tmp/stand-in/loadwatch.1.gz" >"$tmp/stand-in/man.txt"
covers "$tmp/stand-in/loadwatch" "$tmp/stand-in/man.txt"
grep -qxF '.SH SUBCOMMANDS' "$tmp/stand-in/man.txt" && grep -qxF '.a line starting with a dot' "$tmp/stand-in/man.txt" &&
  zcat "$tmp/stand-in/loadwatch.1.gz" | grep -qxF '\&.a line starting with a dot' &&
  ok "with a subcommand, SUBCOMMANDS gives its --help ($covered flags and subcommands checked)" ||
  fail "no SUBCOMMANDS section for a subcommand"

# --- dpkg: install, upgrade, remove, purge in a scratch root --------------------------------
# dpkg --root with chrootless scripts runs the real maintainer scripts with DPKG_ROOT set, as
# when an image is built: systemd-sysusers and deb-systemd-helper write into the scratch root,
# and nothing may act on the running system (systemctl and deb-systemd-invoke are stand-ins
# that log any call here).
droot=$tmp/droot
mkdir -p "$droot/var/lib/dpkg/info" "$droot/var/lib/dpkg/updates" "$tmp/guard"
touch "$droot/var/lib/dpkg/status"
for t in systemctl deb-systemd-invoke; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$t" "$tmp/guard.log" >"$tmp/guard/$t"
  chmod +x "$tmp/guard/$t"
done
dpkgr() {
  PATH="$tmp/guard:$PATH" dpkg --root="$droot" --force-script-chrootless --force-not-root \
    --force-depends --force-confold --log=/dev/null "$@" >>"$tmp/dpkg.log" 2>&1 ||
    { fail "dpkg $*:"; tail -20 "$tmp/dpkg.log"; }
}
status() { dpkg-query --root="$droot" -W -f='${Status} ${Version}' loadwatch 2>/dev/null || true; }
wants=$droot/etc/systemd/system/multi-user.target.wants/loadwatch.service
yml=$droot/etc/loadwatch/loadwatch.yml
defaults=$droot/etc/default/loadwatch

dpkgr -i "$deb"
[ "$(status)" = "install ok installed $(field Version)" ] && ok "dpkg --root -i: installed" || fail "status: $(status)"
user=$(grep '^loadwatch:' "$droot/etc/passwd" || true)
IFS=: read -r _ _ uid gid _ home shell <<<"$user"
[ -n "$user" ] && [ "$uid" -lt 1000 ] && [ "$shell" = /usr/sbin/nologin ] &&
  grep -q "^loadwatch:x:$gid:" "$droot/etc/group" &&
  ok "system user and group loadwatch (uid $uid, home $home, $shell)" || fail "user: '$user'"
[ "$(readlink "$wants")" = /usr/lib/systemd/system/loadwatch.service ] &&
  ok "unit enabled (multi-user.target.wants) without a running systemd" || fail "not enabled: $(ls -l "$wants" 2>&1)"
dpkg-query --root="$droot" -W -f='${Conffiles}\n' loadwatch | awk 'NF {print $1}' | sort >"$tmp/registered"
[ "$(cat "$tmp/registered")" = "$(sort "$tmp/control/conffiles")" ] && ok "conffiles registered" ||
  fail "conffiles: $(cat "$tmp/registered")"

# Upgrade to a newer version whose /etc/default/loadwatch changed (loadwatch.yml did not),
# both edited by the administrator: both edits survive, the new default lands beside it.
echo 'targets: [{name: app, match: {port: 3000}}]  # edited' >>"$yml"
echo 'LOADWATCH_ARGS="--web.listen-address=127.0.0.1:9797"  # edited' >>"$defaults"
dpkg-deb -R "$deb" "$tmp/v2"
sed -i 's/^Version: .*/Version: 99.0.0/' "$tmp/v2/DEBIAN/control"
echo '# a new default' >>"$tmp/v2/etc/default/loadwatch"
(cd "$tmp/v2" && find etc usr -type f -exec md5sum {} + >DEBIAN/md5sums)
dpkg-deb --root-owner-group -Zgzip -b "$tmp/v2" "$tmp/loadwatch_99.0.0.deb" >/dev/null
dpkgr -i "$tmp/loadwatch_99.0.0.deb"
[ "$(status)" = "install ok installed 99.0.0" ] && ok "upgraded to 99.0.0" || fail "status: $(status)"
grep -q '# edited' "$yml" && [ ! -e "$yml.dpkg-dist" ] && [ ! -e "$yml.dpkg-new" ] &&
  ok "edited loadwatch.yml kept on upgrade" || fail "loadwatch.yml after upgrade: $(ls "$droot/etc/loadwatch")"
grep -q '# edited' "$defaults" && grep -q '# a new default' "$defaults.dpkg-dist" &&
  ok "edited /etc/default/loadwatch kept, the new one beside it (.dpkg-dist)" || fail "default after upgrade"
[ "$(grep -c '^loadwatch:' "$droot/etc/passwd")" = 1 ] && [ "$(grep '^loadwatch:' "$droot/etc/passwd")" = "$user" ] &&
  ok "user unchanged on upgrade" || fail "passwd after upgrade: $(grep '^loadwatch:' "$droot/etc/passwd")"
# An administrator's `systemctl disable` (the symlink gone) is kept across upgrades.
rm "$wants"
dpkgr -i "$tmp/loadwatch_99.0.0.deb"
[ ! -e "$wants" ] && [ ! -L "$wants" ] && ok "a disabled unit stays disabled on upgrade" || fail "re-enabled on upgrade"
ln -s /usr/lib/systemd/system/loadwatch.service "$wants"

dpkgr -r loadwatch
[ "$(status)" = "deinstall ok config-files 99.0.0" ] && [ ! -e "$droot/usr/bin/loadwatch" ] &&
  grep -q '# edited' "$yml" && grep -q '# edited' "$defaults" &&
  ok "removed: binary gone, edited config kept" || fail "after remove: $(status)"
dpkgr -P loadwatch
[ -z "$(status)" ] && [ ! -e "$droot/etc/loadwatch" ] && [ ! -e "$defaults" ] && [ ! -e "$defaults.dpkg-dist" ] &&
  ok "purged: /etc/loadwatch and /etc/default/loadwatch gone" ||
  fail "after purge: $(status); $(find "$droot/etc" -name '*loadwatch*')"
[ ! -e "$wants" ] && [ ! -L "$wants" ] && [ -z "$(find "$droot/var/lib/systemd" -name '*loadwatch*')" ] &&
  ok "purged: enablement and deb-systemd-helper state gone" || fail "unit state left after purge"
grep -q '^loadwatch:' "$droot/etc/passwd" && ok "the loadwatch user stays after purge (Debian leaves system users)" ||
  fail "user deleted on purge"
[ ! -s "$tmp/guard.log" ] && ok "with DPKG_ROOT no script called systemctl or deb-systemd-invoke" ||
  fail "calls on the running system: $(cat "$tmp/guard.log")"

# lintian can fail this package: without its copyright file it reports an error.
rm "$tmp/v2/usr/share/doc/loadwatch/copyright"
dpkg-deb --root-owner-group -Zgzip -b "$tmp/v2" "$tmp/broken.deb" >/dev/null
if lintian --fail-on error,warning "$tmp/broken.deb" >"$tmp/lintian-broken.log" 2>&1; then
  fail "lintian passed a package without copyright"
elif grep -q 'no-copyright-file' "$tmp/lintian-broken.log"; then
  ok "lintian fails a package without copyright"
else
  fail "lintian on the broken package:"; cat "$tmp/lintian-broken.log"
fi

# --- maintainer scripts and a running systemd (stand-ins) ----------------------------------
# The scripts act on the running system only where systemd is PID 1 (/run/systemd/system).
# A private mount namespace gives them a /run with or without it, and stand-ins on PATH log
# each call to systemctl, deb-systemd-helper, deb-systemd-invoke and systemd-sysusers.
fake=$tmp/fake
mkdir -p "$fake"
for t in systemctl deb-systemd-helper deb-systemd-invoke systemd-sysusers; do
  cat >"$fake/$t" <<EOF
#!/bin/sh
echo "$t \$*" >>"$tmp/calls"
# was-enabled: 0 (enabled, or never seen: a first install) unless told otherwise.
[ "\$1 \$2" = "--quiet was-enabled" ] && exit "\${FAKE_WAS_ENABLED:-0}"
exit 0
EOF
  chmod +x "$fake/$t"
done
can_unshare=no
unshare --mount --propagation private true 2>/dev/null && can_unshare=yes
# calls SYSTEMD(yes|no) SCRIPT ARGS...: prints the calls the script made, or "skip".
calls() {
  local systemd=$1 script=$2
  shift 2
  : >"$tmp/calls"
  if [ "$can_unshare" = yes ]; then
    env -u DPKG_ROOT PATH="$fake:$PATH" unshare --mount --propagation private sh -c '
      mount -t tmpfs tmpfs /run && { [ "$0" = no ] || mkdir -p /run/systemd/system; } && exec sh "$@"' \
      "$systemd" "$tmp/control/$script" "$@" || echo "exit $?"
  elif [ "$systemd" = "$([ -d /run/systemd/system ] && echo yes || echo no)" ]; then
    env -u DPKG_ROOT PATH="$fake:$PATH" sh "$tmp/control/$script" "$@" || echo "exit $?"
  else
    echo skip
    return
  fi
  cat "$tmp/calls"
}
expect() {  # expect WHAT ACTUAL EXPECTED-LINES...
  local what=$1 actual=$2
  shift 2
  if [ "$actual" = skip ]; then
    echo "skip: $what (no mount namespace here, and the host's systemd state differs)"
    skips=$((skips + 1))
  elif [ "$actual" = "$(printf '%s\n' "$@" | sed '/^$/d')" ]; then
    ok "$what"
  else
    fail "$what: got"; echo "$actual" | sed 's/^/    /'
  fi
}
sysusers='systemd-sysusers loadwatch.conf'
was='deb-systemd-helper --quiet was-enabled loadwatch.service'
enable='deb-systemd-helper enable loadwatch.service'
reload='systemctl --system daemon-reload'
expect "install: user, enable, start" "$(calls yes postinst configure '')" \
  "$sysusers" "$was" "$enable" "$reload" 'deb-systemd-invoke start loadwatch.service'
expect "upgrade: prerm leaves the service running" "$(calls yes prerm upgrade 99.0.0)" ''
expect "upgrade: postinst restarts it onto the new binary" "$(calls yes postinst configure 0.1.0)" \
  "$sysusers" "$was" "$enable" "$reload" 'deb-systemd-invoke restart loadwatch.service'
expect "upgrade of a disabled unit: state updated, not re-enabled" \
  "$(FAKE_WAS_ENABLED=1 calls yes postinst configure 0.1.0)" \
  "$sysusers" "$was" 'deb-systemd-helper update-state loadwatch.service' "$reload" \
  'deb-systemd-invoke restart loadwatch.service'
expect "remove: prerm stops the service" "$(calls yes prerm remove)" 'deb-systemd-invoke stop loadwatch.service'
expect "remove: postrm reloads systemd" "$(calls yes postrm remove)" "$reload"
expect "purge: postrm purges the unit's state" "$(calls yes postrm purge)" \
  'deb-systemd-helper purge loadwatch.service'
expect "no systemd (container build): install creates the user and enables, starts nothing" \
  "$(calls no postinst configure '')" "$sysusers" "$was" "$enable"
expect "no systemd: remove calls nothing" "$(calls no prerm remove; calls no postrm remove)" ''
expect "no systemd: purge purges the unit's state" "$(calls no postrm purge)" \
  'deb-systemd-helper purge loadwatch.service'

if [ "$fails" -gt 0 ]; then
  echo "$fails failed"
  exit 1
fi
# 77: ctest counts the test as skipped, so a check that could not run is never a pass.
if [ "$skips" -gt 0 ]; then
  echo "$skips checks skipped (the others passed): exit 77"
  exit 77
fi
echo "all package checks passed"
