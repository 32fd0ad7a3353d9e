#!/bin/sh
# Writes the package's /usr/share/doc/loadwatch/changelog.gz from CHANGELOG.md.
#   changelog.sh CHANGELOG.md VERSION MAINTAINER OUTPUT.gz
# The package version has no Debian revision (it is built from this tree, not from an
# upstream tarball), so Debian reads changelog.gz as the package's own changelog, in Debian's
# changelog format: each "## VERSION / YYYY-MM-DD" section becomes one entry, its "* ..."
# lines become items wrapped within 80 columns. The newest section must be VERSION: a release
# without a changelog entry fails the build.
set -eu
md=$1 version=$2 maintainer=$3 out=$4

newest=$(sed -n 's|^## \([^ ]*\) / .*|\1|p' "$md" | head -1)
if [ "$newest" != "$version" ]; then
  echo "changelog.sh: the newest section of $md is '$newest', not $version" >&2
  exit 1
fi

mkdir -p "$(dirname "$out")"
tmp=$out.tmp
awk -v maintainer="$maintainer" '
  function flush() { if (item != "") { wrap(item); item = "" } }
  # One item: "  * " then words, continuation lines indented by 4, lines under 80 columns.
  function wrap(text,   n, words, i, line) {
    n = split(text, words, " ")
    line = "  *"
    for (i = 1; i <= n; i++) {
      if (length(line) + 1 + length(words[i]) > 79 && line != "  *" && line != "   ") {
        print line
        line = "   "
      }
      line = line " " words[i]
    }
    print line
  }
  function close_entry() {
    if (entry) {
      flush()
      cmd = "date -u -R -d " date
      cmd | getline stamp
      close(cmd)
      printf "\n -- %s  %s\n", maintainer, stamp
    }
  }
  /^## / {
    close_entry()
    if (entry) print ""
    # "## 0.1.0 / 2026-12-01"
    if (!match($0, /^## [^ ]+ \/ [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$/)) {
      print "changelog.sh: bad heading: " $0 > "/dev/stderr"; exit 1
    }
    version = $2; date = $4
    printf "loadwatch (%s) bookworm; urgency=medium\n\n", version
    entry = 1
    next
  }
  !entry { next }
  /^\* / { flush(); item = substr($0, 3); next }
  /^[ \t]*$/ { flush(); next }
  # A continuation line, or a paragraph of its own (also made an item).
  { sub(/^ +/, ""); item = (item == "" ? $0 : item " " $0) }
  END { close_entry() }
' "$md" >"$tmp"
gzip -n9 <"$tmp" >"$out"
rm -f "$tmp"
