"""A compact, versioned codec: any :class:`~engine.state.State` to bytes and back (for stores).

Format version 1: one version byte, then the state's fields in declaration order as compact
JSON (the rules as their option values; tuples as arrays). Decoding checks the version and
rebuilds an equal state; a newer engine keeps reading the versions it knows. The rules of a
set of option values are validated once per process (a bounded cache: a table's rules never
change, and its state is decoded again and again).

>>> from engine import Rules, new_match
>>> s = new_match(Rules.preset("parejas"), 7)
>>> decode_state(encode_state(s)) == s
True
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .errors import InvalidInput
from .events import HandResult
from .rules import Rules
from .state import State, Status

VERSION = 1
_RULE_FIELDS = tuple(f.name for f in dataclasses.fields(Rules))
_STATUS = State._fields.index("status") - 1
_LAST_RESULT = State._fields.index("last_result") - 1
"""Indexes among the encoded fields after the rules."""


def encode_state(state: State) -> bytes:
    """The state as bytes (format :data:`VERSION`)."""
    rest = json.dumps(state[1:], separators=(",", ":")).encode()
    return _head(state.rules) + rest[1:]  # rest[0] is the '[' the head already opened


_RULES_CACHE_MAX = 256
_rules_by_values: dict[tuple[Any, ...], Rules] = {}
_head_by_rules: dict[Rules, bytes] = {}


def _head(rules: Rules) -> bytes:
    """The bytes every encoded state of these rules starts with: the version byte, the opening
    '[' and the rules' option values with their ','. Computed once per distinct rules value
    (Rules is frozen; a bounded cache, as for decoding)."""
    found = _head_by_rules.get(rules)
    if found is None:
        opts = rules.options()
        values = json.dumps([opts[name] for name in _RULE_FIELDS], separators=(",", ":"))
        found = bytes((VERSION,)) + b"[" + values.encode() + b","
        if len(_head_by_rules) < _RULES_CACHE_MAX:
            _head_by_rules[rules] = found
    return found


def _rules(values: list[Any]) -> Rules:
    """The rules of these option values (in field order), validated once per distinct set."""
    key = tuple(values)
    found = _rules_by_values.get(key)
    if found is None:
        found = Rules.from_options(dict(zip(_RULE_FIELDS, values, strict=True)))
        if len(_rules_by_values) < _RULES_CACHE_MAX:
            _rules_by_values[key] = found
    return found


def _tuples(x: list[Any]) -> tuple[Any, ...]:
    """A decoded JSON array as the tuple it was encoded from, nested arrays included."""
    if list in map(type, x):
        return tuple([_tuples(i) if type(i) is list else i for i in x])
    return tuple(x)


def decode_state(data: bytes) -> State:
    """The state encoded by :func:`encode_state`; :class:`InvalidInput` if unreadable."""
    if not data or data[0] != VERSION:
        raise InvalidInput("bad_state_bytes", "unknown state format version")
    try:
        fields = json.loads(data[1:])
        rules = _rules(fields[0])
        values: list[Any] = [_tuples(v) if type(v) is list else v for v in fields[1:]]
        values[_STATUS] = Status(values[_STATUS])
        if values[_LAST_RESULT] is not None:
            values[_LAST_RESULT] = HandResult(*values[_LAST_RESULT])
        return State(rules, *values)
    except (ValueError, TypeError, IndexError) as exc:
        raise InvalidInput("bad_state_bytes", "state bytes are corrupt") from exc
