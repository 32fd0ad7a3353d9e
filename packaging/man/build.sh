#!/bin/sh
# Makes loadwatch(1) from the built binary's --help, so the page cannot drift from the flags.
#   build.sh HELP2MAN LOADWATCH INCLUDE.h2m VERSION OUTPUT.gz
set -eu
help2man=$1 binary=$2 include=$3 version=$4 out=$5
page=${out%.gz}
mkdir -p "$(dirname "$out")"

LC_ALL=C "$help2man" --no-info --section=1 --version-string="$version" \
  --include="$include" --output="$page.tmp" "$binary"
# help2man ends a bold option name at its first dot (\fB\-\-config\fR.file) and at the comma
# of CLI11's "-h,--help": make the whole name bold.
sed -e 's/^\\fB\(\\-\\-[[:alnum:]_\\-]*\)\\fR\(\.[[:alnum:]_.\\-]*\)/\\fB\1\2\\fR/' \
  -e 's/^\\fB\\-h\\fR,\\-\\-help$/\\fB\\-h\\fR, \\fB\\-\\-help\\fR/' "$page.tmp" >"$page"
rm -f "$page.tmp"
gzip -n9f "$page"
