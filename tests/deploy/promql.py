"""The metric names a PromQL expression reads (enough of the grammar for that: strings, label
matchers, ranges, grouping clauses, functions and keywords are skipped)."""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
    | (?P<number>\d[\w.]*)
    | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
    | (?P<var>\$\{[^}]*\}|\$\w+)
    | (?P<other>\S)
    )""",
    re.X,
)
KEYWORDS = {
    # aggregation operators
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
    # clauses, modifiers and binary operators
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "and",
    "or",
    "unless",
    "atan2",
    "inf",
    "nan",
}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}


def _tokens(expr: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
    assert not expr[pos:].strip(), f"cannot read {expr[pos:]!r}"
    return out


def metric_names(expr: str) -> set[str]:
    """Every metric name ``expr`` selects."""
    toks = _tokens(expr)
    names: set[str] = set()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if text in ("{", "["):  # label matchers, or a range or subquery: to the closing one
            close = "}" if text == "{" else "]"
            while i < len(toks) and toks[i] != ("other", close):
                i += 1
        elif kind == "ident" and text in GROUPING and nxt == "(":
            while i < len(toks) and toks[i] != ("other", ")"):
                i += 1
        elif kind == "ident" and text not in KEYWORDS and nxt != "(":
            names.add(text)
        i += 1
    return names
