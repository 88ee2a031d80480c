"""The wire: the only package that knows both the engine's values and the ``tute.v1`` messages.

- :mod:`.cards`: suits, cards, actions and rules, in (requests, :class:`BadField` on malformed
  content) and out;
- :mod:`.scores`: cantes, tutes, hand and match results, the standing per side;
- :mod:`.events`: engine events to per-audience messages (:class:`EventVariants`), numbered and
  stamped into the bytes the store keeps;
- :mod:`.views`: the lobby ``Table``, a seat's ``TableView`` and the service's own events;
- :mod:`.framing`: the protobuf wire format by hand (varints, field keys, length-delimited
  fields) for messages sent as bytes built from parts;
- :mod:`.view_bytes`: a seat's ``TableView`` as bytes, from parts serialized once (the hot
  path of ``GetTable`` and ``SubmitAction``);
- :mod:`.records`: fair deals' commitments and reveals in the events, the ``MatchRecord``
  and its replay steps.

Everything the rest of the service needs is re-exported here.
"""

from .cards import (
    BadField,
    action_from_proto,
    action_to_proto,
    card_from_proto,
    card_to_proto,
    rules_from_proto,
    rules_to_proto,
    side_of,
    suit_from_proto,
    suit_to_proto,
)
from .events import (
    FORFEIT_DISCONNECTED,
    FORFEIT_LEFT,
    Event,
    EventVariants,
    ForfeitReason,
    ended_seat,
    engine_events_to_proto,
    event_time,
    parse,
    stamp,
)
from .records import deal_reveal, record_to_proto, replay_to_proto, stamp_deals
from .view_bytes import Encoded, view_bytes, with_view
from .views import (
    match_started_event,
    seat_joined_event,
    seat_left_event,
    table_to_proto,
    turn_started_event,
    turn_started_variants,
    view_to_proto,
)

__all__ = [
    "FORFEIT_DISCONNECTED",
    "FORFEIT_LEFT",
    "BadField",
    "Encoded",
    "Event",
    "EventVariants",
    "ForfeitReason",
    "action_from_proto",
    "action_to_proto",
    "card_from_proto",
    "card_to_proto",
    "deal_reveal",
    "ended_seat",
    "engine_events_to_proto",
    "event_time",
    "match_started_event",
    "parse",
    "record_to_proto",
    "replay_to_proto",
    "rules_from_proto",
    "rules_to_proto",
    "seat_joined_event",
    "seat_left_event",
    "side_of",
    "stamp",
    "stamp_deals",
    "suit_from_proto",
    "suit_to_proto",
    "table_to_proto",
    "turn_started_event",
    "turn_started_variants",
    "view_bytes",
    "view_to_proto",
    "with_view",
]
