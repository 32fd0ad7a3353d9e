#!/usr/bin/env python3
"""The layer table of docs/architecture.md holds for the code.

Every folder of product code (under src/ and collectors/) must have a row, and every
`#include "..."` of a file of the tree must name a file of its own folder or of a folder its
row allows. Fails with the include that breaks a rule, or the folder that has no row.
"""
import os
import re
import sys

ROOT = os.environ.get("LOADWATCH_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "architecture.md")
CODE_ROOTS = ("src", "collectors")
# Generated at build time; every layer may include it.
GENERATED = {"version.h"}

ROW = re.compile(r"^\|\s*`([^`]+/)`[^|]*\|[^|]*\|(.*)\|\s*$")
FOLDER = re.compile(r"`([^`]+/)`")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_table():
    """{folder: set of folders it may include}, from the table headed 'may include'."""
    rows, in_table = {}, False
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            if line.startswith("| folder |") and "may include" in line:
                in_table = True
                continue
            if in_table and not line.startswith("|"):
                break
            m = ROW.match(line.rstrip("\n")) if in_table else None
            if m:
                allowed = set(FOLDER.findall(m.group(2)))
                rows[m.group(1)] = allowed
    return rows


def folder_of(path):
    return os.path.dirname(path) + "/"


def code_files():
    for top in CODE_ROOTS:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if name.endswith((".h", ".cpp", ".c")):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def resolve(include):
    """The tree's file an include names (written from src/ or from the root), or None."""
    for candidate in (os.path.join("src", include), include):
        if os.path.isfile(os.path.join(ROOT, candidate)):
            return candidate
    return None


def main():
    table = layer_table()
    if not table:
        print(f"FAIL: no layer table ('| folder | ... | may include |') in {DOC}")
        return 1
    failures, checked = [], 0
    folders = set()
    for path in sorted(code_files()):
        here = folder_of(path)
        folders.add(here)
        if here not in table:
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for include in INCLUDE.findall(text):
            if include in GENERATED:
                continue
            target = resolve(include)
            if target is None:
                continue  # a system or third-party header spelled with quotes
            there = folder_of(target)
            checked += 1
            if there != here and there not in table[here]:
                failures.append(f"{path} includes {target}: `{here}` may not include `{there}`")
    for folder in sorted(folders - set(table)):
        failures.append(f"`{folder}` holds code but has no row in docs/architecture.md")
    for folder in sorted(set(table) - folders):
        failures.append(f"docs/architecture.md has a row for `{folder}`, which holds no code")
    for line in failures:
        print("FAIL:", line)
    print(f"{checked} includes in {len(folders)} folders checked, {len(failures)} broken")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
