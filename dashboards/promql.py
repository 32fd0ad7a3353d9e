"""A PromQL scanner for lint: finds the vector selectors of an expression.

Not a parser: it tokenizes (strings, ranges, numbers/durations, identifiers, operators) and
walks the tokens, telling metric names from function names, aggregation operators, keywords
and the label lists of by/without/on/ignoring/group_left/group_right. Prometheus itself parses
every expression in the rule tests and the integration test; this only feeds the lint checks.
"""

import re

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<var>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>\d[\w.]*|\.\d[\w.]*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>==|!=|=~|!~|>=|<=|[-+*/%^<>=,(){}@])
""", re.X)

AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile"}
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"}
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
    "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp",
    "floor", "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate",
    "label_join", "label_replace", "ln", "log2", "log10", "minute", "month", "predict_linear",
    "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sqrt", "time",
    "timestamp", "vector", "year", "avg_over_time", "min_over_time", "max_over_time",
    "sum_over_time", "count_over_time", "quantile_over_time", "stddev_over_time",
    "stdvar_over_time", "last_over_time", "present_over_time", "acos", "acosh", "asin",
    "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh", "deg", "pi", "rad",
}


class PromQLError(ValueError):
    pass


class Selector:
    """A vector selector: metric name (None for {__name__=~...}), its matchers, and the
    function it is the direct argument of (e.g. "rate"), if any."""

    def __init__(self, name, matchers, function):
        self.name = name
        self.matchers = matchers  # [(label, op, value)]
        self.function = function

    def matcher(self, label):
        return [m for m in self.matchers if m[0] == label]

    def __repr__(self):
        return f"Selector({self.name!r}, {self.matchers!r}, {self.function!r})"


def tokens(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise PromQLError(f"cannot tokenize at {expr[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup not in ("ws", "comment"):
            out.append((m.lastgroup, m.group()))
    return out


def _unquote(s):
    if s[0] == "`":
        return s[1:-1]
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def selectors(expr):
    """Every vector selector of expr, in order. Raises PromQLError on what it cannot follow
    (unknown function, unbalanced parentheses or braces)."""
    toks = tokens(expr)
    out = []
    calls = []  # stack: function name (or None for a plain parenthesis) per open "("
    i = 0

    def parse_matchers(i):
        # toks[i] is "{"; returns (matchers, index after "}")
        matchers = []
        i += 1
        while i < len(toks) and toks[i][1] != "}":
            if i + 2 >= len(toks) or toks[i][0] != "ident" or toks[i + 1][1] not in ("=", "!=", "=~", "!~") \
                    or toks[i + 2][0] != "str":
                raise PromQLError(f"bad label matcher near {toks[i][1]!r}")
            matchers.append((toks[i][1], toks[i + 1][1], _unquote(toks[i + 2][1])))
            i += 3
            if i < len(toks) and toks[i][1] == ",":
                i += 1
        if i >= len(toks):
            raise PromQLError("unterminated {")
        return matchers, i + 1

    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else None
        if kind == "ident":
            low = text.lower()
            if low in LABEL_LIST_KEYWORDS:
                if nxt != "(":
                    raise PromQLError(f"{text} without a label list")
                j = i + 2
                while j < len(toks) and toks[j][1] != ")":
                    j += 1
                i = j + 1
                continue
            if low in AGGREGATIONS:
                # "sum (x)", "sum by (l) (x)", "sum without (l) (x)"; "sum (x) by (l)" is
                # handled by the label-list rule above.
                j = i + 1
                if j < len(toks) and toks[j][1].lower() in ("by", "without"):
                    while j < len(toks) and toks[j][1] != ")":
                        j += 1
                    j += 1
                if j >= len(toks) or toks[j][1] != "(":
                    raise PromQLError(f"{text} without an argument")
                calls.append(low)
                i = j + 1
                continue
            if low in KEYWORDS:
                i += 1
                continue
            if nxt == "(":
                if text not in FUNCTIONS:
                    raise PromQLError(f"unknown function {text}()")
                calls.append(text)
                i += 2
                continue
            matchers = []
            i += 1
            if i < len(toks) and toks[i][1] == "{":
                matchers, i = parse_matchers(i)
            out.append(Selector(text, matchers, calls[-1] if calls else None))
            continue
        if text == "{":
            matchers, i = parse_matchers(i)
            names = [m[2] for m in matchers if m[0] == "__name__" and m[1] == "="]
            out.append(Selector(names[0] if names else None, matchers, calls[-1] if calls else None))
            continue
        if text == "(":
            calls.append(None)
        elif text == ")":
            if not calls:
                raise PromQLError("unbalanced )")
            calls.pop()
        i += 1
    if calls:
        raise PromQLError("unbalanced (")
    return out
