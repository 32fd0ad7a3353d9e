"""A small YAML reader for the mixin's own files (Python stdlib has none).

It reads the subset the rule, alert and promtool test files are written in: block mappings and
sequences, "- key: value" items, plain / 'single' / "double" quoted scalars (double-quoted ones
may span lines and are folded as YAML folds them), block scalars (| |- > >-), single-line flow
collections ([a, b], {k: v}) and comments. Every scalar is returned as a str; anything outside
the subset raises YamlError with the line number, so lint fails loudly instead of misreading.
"""

import re


class YamlError(ValueError):
    pass


_KEY = re.compile(r'''^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s'"#\[\]{},&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+|$)''')


def load(text):
    return _Parser(text).document()


class _Parser:
    def __init__(self, text):
        self.lines = text.replace("\t", "    ").split("\n")
        self.i = 0

    # -- line helpers -------------------------------------------------------------------------
    def _significant(self):
        """Index of the next line that is neither blank nor a comment, or None."""
        j = self.i
        while j < len(self.lines):
            s = self.lines[j].strip()
            if s and not s.startswith("#"):
                return j
            j += 1
        return None

    @staticmethod
    def _indent(line):
        return len(line) - len(line.lstrip(" "))

    def _err(self, msg, j=None):
        j = self.i if j is None else j
        return YamlError(f"line {j + 1}: {msg}")

    # -- structure ----------------------------------------------------------------------------
    def document(self):
        j = self._significant()
        if j is None:
            return None
        value = self._block(self._indent(self.lines[j]))
        j = self._significant()
        if j is not None:
            raise self._err("unexpected content (bad indentation?)", j)
        return value

    def _block(self, indent):
        j = self._significant()
        content = self.lines[j].strip()
        if content == "-" or content.startswith("- "):
            return self._sequence(indent)
        return self._mapping(indent)

    def _sequence(self, indent):
        items = []
        while True:
            j = self._significant()
            if j is None or self._indent(self.lines[j]) != indent:
                break
            content = self.lines[j].strip()
            if not (content == "-" or content.startswith("- ")):
                break
            rest = content[1:].strip()
            if not rest or rest.startswith("#"):
                self.i = j + 1
                nxt = self._significant()
                if nxt is None or self._indent(self.lines[nxt]) <= indent:
                    items.append(None)
                else:
                    items.append(self._block(self._indent(self.lines[nxt])))
            elif _KEY.match(rest):
                # "- key: value": a mapping whose keys sit at the column after "- ".
                col = indent + (len(content) - len(rest))
                self.lines[j] = " " * col + rest
                self.i = j
                items.append(self._mapping(col))
            else:
                self.i = j
                items.append(self._inline_value(rest, indent, j))
        return items

    def _mapping(self, indent):
        out = {}
        while True:
            j = self._significant()
            if j is None:
                break
            line = self.lines[j]
            ind = self._indent(line)
            if ind < indent:
                break
            if ind > indent:
                raise self._err("unexpected indentation", j)
            content = line.strip()
            if content == "-" or content.startswith("- "):
                break
            m = _KEY.match(content)
            if not m:
                raise self._err(f"expected 'key: value', got {content!r}", j)
            key = self._scalar_token(m.group(1), j)
            if key in out:
                raise self._err(f"duplicate key {key!r}", j)
            rest = content[m.end():].strip()
            self.i = j
            if not rest or rest.startswith("#"):
                self.i = j + 1
                nxt = self._significant()
                if nxt is None:
                    out[key] = None
                else:
                    nind = self._indent(self.lines[nxt])
                    ncontent = self.lines[nxt].strip()
                    if nind > indent or (nind == indent and (ncontent == "-" or ncontent.startswith("- "))):
                        out[key] = self._block(nind)
                    else:
                        out[key] = None
            else:
                out[key] = self._inline_value(rest, indent, j)
        return out

    # -- scalars ------------------------------------------------------------------------------
    def _inline_value(self, rest, indent, j):
        """Value that starts on line j after 'key:' or '- '; advances self.i past it."""
        if rest[0] in "|>":
            return self._block_scalar(rest, indent, j)
        if rest[0] == '"':
            return self._double_quoted(rest, j)
        if rest[0] == "'":
            m = re.match(r"'((?:[^']|'')*)'\s*(#.*)?$", rest)
            if not m:
                raise self._err("unterminated or trailing text after single-quoted scalar", j)
            self.i = j + 1
            return m.group(1).replace("''", "'")
        if rest[0] in "[{":
            value, pos = _flow(rest, 0, j)
            tail = rest[pos:].strip()
            if tail and not tail.startswith("#"):
                raise self._err(f"trailing text after flow collection: {tail!r}", j)
            self.i = j + 1
            return value
        if rest[0] in "&*!%@`":
            raise self._err(f"unsupported YAML feature: {rest[0]!r}", j)
        self.i = j + 1
        value = re.split(r"\s+#", rest, maxsplit=1)[0].strip()
        # A plain scalar may continue on more-indented lines (folded with spaces).
        parts = [value]
        while True:
            nxt = self._significant()
            if nxt is None or self._indent(self.lines[nxt]) <= indent:
                break
            cont = self.lines[nxt].strip()
            if _KEY.match(cont) or cont.startswith("- "):
                raise self._err("unexpected indentation", nxt)
            parts.append(re.split(r"\s+#", cont, maxsplit=1)[0].strip())
            self.i = nxt + 1
        return " ".join(parts)

    def _scalar_token(self, tok, j):
        if tok.startswith('"'):
            return _unescape_double(tok[1:-1], j)
        if tok.startswith("'"):
            return tok[1:-1].replace("''", "'")
        return tok.strip()

    def _double_quoted(self, rest, j):
        text, k = rest[1:], j
        pieces = []
        while True:
            m = re.match(r'((?:[^"\\]|\\.)*)"(.*)$', text)
            if m:
                pieces.append(m.group(1))
                tail = m.group(2).strip()
                if tail and not tail.startswith("#"):
                    raise self._err(f"trailing text after double-quoted scalar: {tail!r}", k)
                break
            pieces.append(text)
            k += 1
            if k >= len(self.lines):
                raise self._err("unterminated double-quoted scalar", j)
            text = self.lines[k].lstrip(" ")
        self.i = k + 1
        # YAML folding: a line break between lines is a space, an empty line is a newline.
        out = ""
        for n, p in enumerate(pieces):
            p = p if n == 0 else p.lstrip(" ")
            p = p if n == len(pieces) - 1 else p.rstrip(" ")
            if n == 0:
                out = p
            elif p == "" and n != len(pieces) - 1:
                out += "\n"
            else:
                out += ("" if out.endswith("\n") else " ") + p
        return _unescape_double(out, j)

    def _block_scalar(self, header, indent, j):
        m = re.match(r"([|>])([-+]?)\s*(#.*)?$", header)
        if not m:
            raise self._err(f"unsupported block scalar header {header!r}", j)
        style, chomp = m.group(1), m.group(2)
        k = j + 1
        body = []
        content_indent = None
        while k < len(self.lines):
            line = self.lines[k]
            if line.strip() == "":
                body.append("")
                k += 1
                continue
            ind = self._indent(line)
            if content_indent is None:
                if ind <= indent:
                    break
                content_indent = ind
            if ind < content_indent:
                break
            body.append(line[content_indent:])
            k += 1
        self.i = k
        while body and body[-1] == "":
            body.pop()
        if style == "|":
            text = "\n".join(body)
        else:
            # Folding: a break between two plain lines is a space, an empty line is a newline,
            # lines indented deeper than the first keep their breaks.
            text = body[0] if body else ""
            for prev, line in zip(body, body[1:]):
                if line == "":
                    text += "\n"
                elif prev == "":
                    text += line
                elif prev.startswith(" ") or line.startswith(" "):
                    text += "\n" + line
                else:
                    text += " " + line
        if chomp == "-":
            return text.rstrip("\n")
        return text + "\n" if text else text


def _unescape_double(s, j):
    out, k = [], 0
    esc = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "t": "\t", " ": " ", "0": "\0"}
    while k < len(s):
        c = s[k]
        if c == "\\":
            if k + 1 >= len(s) or s[k + 1] not in esc:
                raise YamlError(f"line {j + 1}: unsupported escape in double-quoted scalar")
            out.append(esc[s[k + 1]])
            k += 2
        else:
            out.append(c)
            k += 1
    return "".join(out)


def _flow(s, pos, j):
    """Parses a single-line flow collection or scalar at s[pos:]; returns (value, end)."""
    def skip(p):
        while p < len(s) and s[p] == " ":
            p += 1
        return p

    pos = skip(pos)
    if s[pos] in "[{":
        close = "]" if s[pos] == "[" else "}"
        is_map = s[pos] == "{"
        items = {} if is_map else []
        pos = skip(pos + 1)
        if pos < len(s) and s[pos] == close:
            return items, pos + 1
        while True:
            if is_map:
                key, pos = _flow_scalar(s, pos, j, stop=":")
                pos = skip(pos)
                if pos >= len(s) or s[pos] != ":":
                    raise YamlError(f"line {j + 1}: expected ':' in flow mapping")
                value, pos = _flow(s, pos + 1, j)
                items[key] = value
            else:
                value, pos = _flow(s, pos, j)
                items.append(value)
            pos = skip(pos)
            if pos < len(s) and s[pos] == ",":
                pos = skip(pos + 1)
                continue
            if pos < len(s) and s[pos] == close:
                return items, pos + 1
            raise YamlError(f"line {j + 1}: unterminated flow collection")
    return _flow_scalar(s, pos, j, stop=",]}")


def _flow_scalar(s, pos, j, stop):
    if s[pos] == '"':
        m = re.compile(r'"((?:[^"\\]|\\.)*)"').match(s, pos)
        if not m:
            raise YamlError(f"line {j + 1}: unterminated double-quoted scalar")
        return _unescape_double(m.group(1), j), m.end()
    if s[pos] == "'":
        m = re.compile(r"'((?:[^']|'')*)'").match(s, pos)
        if not m:
            raise YamlError(f"line {j + 1}: unterminated single-quoted scalar")
        return m.group(1).replace("''", "'"), m.end()
    end = pos
    while end < len(s) and s[end] not in stop and not (s[end] == ":" and ":" in stop):
        end += 1
    return s[pos:end].strip(), end
