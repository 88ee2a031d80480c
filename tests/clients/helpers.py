"""Helpers for the client tests: comparing models with the server's views, short matches."""

from __future__ import annotations

from google.protobuf import text_format

from tute.v1 import view_pb2

SHORT_2P = {"target_points": 1, "turn_time_s": 0}
"""Rule options for a 2-player match of one hand without a clock (with ``corriente-6``)."""
SHORT_4P = {"target_points": 1, "turn_time_s": 0}


def comparable(view: view_pb2.TableView) -> str:
    """A view without what no event reports (``Seat.connected``, a version raised by a change
    without events), as text for readable assertion failures."""
    out = view_pb2.TableView()
    out.CopyFrom(view)
    out.ClearField("version")
    for seat in out.seats:
        seat.connected = False
    return text_format.MessageToString(out)
