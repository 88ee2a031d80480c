"""A watch stream's messages written straight from the events' stored bytes.

An event reaches a watcher as the bytes the store keeps for its audience
(:class:`service.store.base.StoredEvent`). A ``WatchTableResponse`` carrying events is those
bytes framed as a protobuf embedded message (a field tag and a length), so the stream writes
the framing around them instead of parsing each event into a message, copying it into a
response and serializing it again. The bytes are exactly what serializing the message gives
(tests/service/test_stream_bytes.py checks it), and the gRPC handlers pass bytes through
(:func:`passing_bytes`); a transport that needs the message (Connect's JSON) parses them
(:func:`watch_message`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tute.v1 import service_pb2

WatchItem = service_pb2.WatchTableResponse | bytes
"""What WatchTable yields: a message (a snapshot), or a serialized ``WatchTableResponse``."""


def _tag(message: Any, field: str) -> bytes:
    """The key of a length-delimited field (wire type 2) of the message class ``message``, as
    a varint."""
    return _varint(message.DESCRIPTOR.fields_by_name[field].number << 3 | 2)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_EVENT = _tag(service_pb2.WatchTableResponse, "event")
_EVENTS = _tag(service_pb2.WatchTableResponse, "events")
_BATCH_EVENT = _tag(service_pb2.EventBatch, "events")
_PLAY_WATCH = _tag(service_pb2.PlayTableResponse, "watch")


def _field(tag: bytes, data: bytes) -> bytes:
    return tag + _varint(len(data)) + data


def event_response(event: bytes) -> bytes:
    """``WatchTableResponse{event}`` of one serialized event."""
    return _field(_EVENT, event)


def batch_response(events: Sequence[bytes]) -> bytes:
    """``WatchTableResponse{events: EventBatch{events}}`` of serialized events, in order."""
    return _field(_EVENTS, b"".join([_field(_BATCH_EVENT, e) for e in events]))


def play_watch(item: WatchItem) -> service_pb2.PlayTableResponse | bytes:
    """``PlayTableResponse{watch}`` of what WatchTable yielded (bytes stay bytes)."""
    if isinstance(item, bytes):
        return _field(_PLAY_WATCH, item)
    return service_pb2.PlayTableResponse(watch=item)


def watch_message(item: WatchItem) -> service_pb2.WatchTableResponse:
    """What WatchTable yielded, as the message."""
    if isinstance(item, bytes):
        return service_pb2.WatchTableResponse.FromString(item)
    return item


def passing_bytes(serialize: Callable[[Any], bytes] | None) -> Callable[[Any], bytes] | None:
    """A gRPC response serializer that sends bytes as they are (a message already
    serialized) and serializes anything else with ``serialize``."""
    if serialize is None:
        return None
    encode = serialize

    def serializer(message: Any) -> bytes:
        return message if type(message) is bytes else encode(message)

    return serializer
