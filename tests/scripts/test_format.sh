#!/usr/bin/env bash
# Every C and C++ file of src/, collectors/ and tests/ is as clang-format (.clang-format: Google,
# 100 columns) lays it out: `clang-format --dry-run -Werror` names each file and line that
# differs. Not checked: third_party/ (upstream code) and tests/fixtures/ (captured data).
# Fix with: clang-format -i FILE...
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src"
if ! command -v clang-format >/dev/null; then
  echo "FAIL: clang-format not found (scripts/install-deps test)"
  exit 1
fi

mapfile -d '' files < <(find src collectors tests -path tests/fixtures -prune -o -type f \
  \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.cc' \) -print0 |
  sort -z)
[ ${#files[@]} -gt 100 ] || { echo "FAIL: only ${#files[@]} files found under $src"; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if clang-format --dry-run -Werror "${files[@]}" 2>"$log"; then
  echo "ok: ${#files[@]} files formatted as .clang-format says"
  exit 0
fi
bad=$(grep -oE '^[^:]+\.(c|h|cpp|hpp|cc):' "$log" | sort -u | sed 's/:$//')
echo "FAIL: $(echo "$bad" | wc -l) of ${#files[@]} files differ from clang-format's layout:"
echo "$bad" | sed 's/^/  /'
head -40 "$log"
exit 1
