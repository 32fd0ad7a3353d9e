#!/usr/bin/env python3
"""Every relative link and image in README.md and the Markdown under docs/, dashboards/ and
bench/ resolves: the file exists in the tree, and a #fragment names a heading of the file it
points to (GitHub's anchors). Links in fenced code blocks are not links."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import lwtest  # noqa: E402

ROOT = os.environ.get("LOADWATCH_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def documents():
    yield os.path.join(ROOT, "README.md")
    for folder in ("docs", "dashboards", "bench"):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith(".md"):
                yield os.path.join(ROOT, folder, name)


def prose(path):
    """The lines of a Markdown file outside fenced code blocks, with their numbers."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"\s*(```|~~~)", line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
                continue
            if fence is None:
                yield n, line


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, -N for
    repeats."""
    seen, out = {}, set()
    for _, line in prose(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


def broken_links(path):
    for n, line in prose(path):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto:
            file_part, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            where = "%s:%d: %s" % (os.path.relpath(path, ROOT), n, target)
            if not os.path.exists(dest):
                yield where + " (no such file)"
            elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                yield where + " (no such heading)"


class DocLinks(unittest.TestCase):
    def test_relative_links_resolve(self):
        checked, broken = 0, []
        for path in documents():
            checked += 1
            broken.extend(broken_links(path))
        print("%d documents checked" % checked)
        self.assertEqual(broken, [], "\n".join(broken))

    def test_the_check_catches_a_broken_link_and_anchor(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "a.md")
            with open(doc, "w") as f:
                f.write("# Title here\n\n[ok](#title-here) [gone](b.md) [bad](a.md#nowhere)\n"
                        "```\n[in code](c.md)\n```\n`[in code](d.md)`\n")
            found = list(broken_links(doc))
        self.assertEqual(len(found), 2, found)
        self.assertIn("b.md (no such file)", found[0])
        self.assertIn("a.md#nowhere (no such heading)", found[1])


if __name__ == "__main__":
    lwtest.main()
