"""The protobuf wire format by hand, for messages sent as bytes built from parts: varints,
field keys (by the field's name in the message's descriptor) and length-delimited fields."""

from __future__ import annotations

from typing import Any, Final

VARINT: Final = 0
LEN: Final = 2
"""Wire types: a varint, and a length-delimited value (a string, bytes, a message)."""

_SMALL: Final = tuple(bytes((i,)) for i in range(128))


def varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf varint."""
    if n < 128:
        return _SMALL[n]
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(message: Any, name: str, wire_type: int = LEN) -> bytes:
    """The key of the field ``name`` of the message class ``message``."""
    return varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | wire_type)


SHORT: Final = 2048
LENGTHS: Final = tuple(varint(n) for n in range(SHORT))
"""The varints of the lengths below 2 kB (almost every event's, batch's and view part's)."""


def length(n: int) -> bytes:
    return LENGTHS[n] if n < SHORT else varint(n)


def field(field_key: bytes, data: bytes) -> bytes:
    """A length-delimited field: a string, a message, one entry of a repeated message."""
    return field_key + length(len(data)) + data
