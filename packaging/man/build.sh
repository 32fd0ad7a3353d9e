#!/bin/sh
# Makes loadwatch(1) from the built binary's --help, so the page cannot drift from the flags.
#   build.sh HELP2MAN LOADWATCH INCLUDE.h2m VERSION OUTPUT.gz
set -eu
help2man=$1 binary=$2 include=$3 version=$4 out=$5
page=${out%.gz}
mkdir -p "$(dirname "$out")"

# Subcommands (`loadwatch NAME ...`) are listed at the end of --help ("  NAME  summary"); the
# --help of each goes into a SUBCOMMANDS section as it is, so their flags are in the page too.
subcommands=$page.subcommands.h2m
: >"$subcommands"
names=$("$binary" --help | sed -n '/^Subcommands/,$ s/^  \([a-z][a-z0-9-]*\)  .*/\1/p')
[ -z "$names" ] || echo '[SUBCOMMANDS]' >>"$subcommands"
for name in $names; do
  printf '.SS "loadwatch %s"\n.nf\n' "$(echo "$name" | sed 's/-/\\-/g')" >>"$subcommands"
  # roff: a backslash is \e, a minus \-, and a line may not start with a control character.
  "$binary" "$name" --help | sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e 's/^\([.'\'']\)/\\\&\1/' >>"$subcommands"
  printf '.fi\n' >>"$subcommands"
done

set -- --include="$include"
[ -z "$names" ] || set -- --include="$subcommands" "$@"  # help2man refuses an empty include
LC_ALL=C "$help2man" --no-info --section=1 --version-string="$version" "$@" \
  --output="$page.tmp" "$binary"
# help2man ends a bold option name at its first dot (\fB\-\-config\fR.file) and at the comma
# of CLI11's "-h,--help": make the whole name bold.
sed -e 's/^\\fB\(\\-\\-[[:alnum:]_\\-]*\)\\fR\(\.[[:alnum:]_.\\-]*\)/\\fB\1\2\\fR/' \
  -e 's/^\\fB\\-h\\fR,\\-\\-help$/\\fB\\-h\\fR, \\fB\\-\\-help\\fR/' "$page.tmp" >"$page"
rm -f "$page.tmp" "$subcommands"
gzip -n9f "$page"
