"""A compact, versioned codec: any :class:`~engine.state.State` to bytes and back (for stores).

Format version 1: one version byte, then the state's fields in declaration order as compact
JSON (the rules as their option values; tuples as arrays). Decoding checks the version and
rebuilds an equal state; a newer engine keeps reading the versions it knows.

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
    opts = state.rules.options()
    fields: list[Any] = [[opts[name] for name in _RULE_FIELDS]]
    fields.extend(state[1:])
    return bytes((VERSION,)) + json.dumps(fields, separators=(",", ":")).encode()


def _tuples(x: Any) -> Any:
    if isinstance(x, list):
        return tuple(_tuples(i) for i in x)
    return x


def decode_state(data: bytes) -> State:
    """The state encoded by :func:`encode_state`; :class:`InvalidInput` if unreadable."""
    if not data or data[0] != VERSION:
        raise InvalidInput("bad_state_bytes", "unknown state format version")
    try:
        fields = json.loads(data[1:])
        rules = Rules.from_options(dict(zip(_RULE_FIELDS, fields[0], strict=True)))
        values = [_tuples(v) for v in fields[1:]]
        values[_STATUS] = Status(values[_STATUS])
        if values[_LAST_RESULT] is not None:
            values[_LAST_RESULT] = HandResult(*values[_LAST_RESULT])
        return State(rules, *values)
    except (ValueError, TypeError, IndexError) as exc:
        raise InvalidInput("bad_state_bytes", "state bytes are corrupt") from exc
