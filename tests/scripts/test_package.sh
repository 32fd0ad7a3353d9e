#!/usr/bin/env bash
# The .deb: CPack builds it from the build dir; its control file names the Debian packages of
# every library the binary loads; it holds the files in FHS places; extracted into a scratch
# root (dpkg -x), the installed binary runs (--version), and serves TLS through the packaged
# civetweb/OpenSSL 3 compat libraries (not the build tree's, not libssl-dev's).
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
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# cpack writes into its own directory (-B), so the build dir only gains CPack's config.
(cd "$build" && cpack -G DEB -B "$tmp/pkg") >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/pkg/loadwatch_*.deb)
ok "cpack built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

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
  ./usr/lib/loadwatch/libssl.so ./usr/lib/loadwatch/libcrypto.so \
  ./usr/share/doc/loadwatch/service.md ./usr/share/doc/loadwatch/examples/web-config.example.yml \
  ./usr/share/loadwatch/rules/loadwatch.rules.yml ./usr/share/loadwatch/rules/loadwatch.alerts.yml; do
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
readelf -d "$bin" | grep -qF 'Library runpath: [$ORIGIN/../lib/loadwatch]' && ok "RUNPATH \$ORIGIN/../lib/loadwatch" ||
  fail "RUNPATH: $(readelf -d "$bin" | grep -i path)"

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
resolved=$(ldd "$bin" | awk '$1 == "libssl.so" {print $3}')
[ "$(readlink -f "$resolved")" = "$root/usr/lib/loadwatch/libssl.so" ] &&
  ok "civetweb's libssl.so resolves to the packaged compat library" || fail "libssl.so => $resolved"

# TLS through the packaged binary: the compat libraries make civetweb's OpenSSL 3 TLS work.
(cd "$tmp" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 -keyout tls.key -out tls.crt) >/dev/null 2>&1
printf 'tls_server_config: {cert_file: tls.crt, key_file: tls.key}\n' >"$tmp/web.yml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# LD_DEBUG=files logs every file the dynamic loader opens: civetweb's dlopen("libssl.so") must
# reuse the packaged compat library (matched by SONAME) and never open libssl-dev's libssl.so,
# which a host without libssl-dev lacks.
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
grep -q "$root/usr/lib/loadwatch/libssl.so" "/proc/$pid/maps" 2>/dev/null &&
  ok "and has the packaged libssl.so mapped" || fail "packaged libssl.so not mapped"
if cat "$tmp"/ld.* | grep -E 'file=lib(ssl|crypto)\.so \[0\]; +dynamically loaded'; then
  fail "civetweb opened an unversioned libssl.so/libcrypto.so of its own"
else
  ok "civetweb's TLS runs on the packaged compat libraries only"
fi
kill "$pid"
wait "$pid" && ok "clean exit on SIGTERM" || fail "exit code $?"
pid=

if [ "$fails" -gt 0 ]; then
  echo "$fails failed"
  exit 1
fi
echo "all package checks passed"
