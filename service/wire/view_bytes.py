"""A seat's ``TableView`` as its serialized bytes, built from parts serialized once.

:func:`~service.wire.views.view_to_proto` builds a view as a message: some 80 messages made
and copied in Python for every call, then serialized, about 400k instructions a view, as
much as the rest of a ``GetTable`` call. Most of a view is the same from one call to the
next: the table's rules and seats, the completed tricks, the scores, a hand that lost one
card. :func:`view_bytes` writes the same message as bytes: each part that recurs is
serialized once (by protobuf, from the same builders :mod:`.views` uses) and kept by its
content, and the scalars are written as varints. A message's fields may follow one another
in any order and a repeated field's entries one by one, so the parts concatenate into a
valid message; parsed, it equals ``view_to_proto`` of the same record and seat (the tests
check every preset, seat and stage of a match).

The same rules as there: every card comes from :func:`engine.view` for the seat, so the bytes
hold only what the seat may see.
"""

from __future__ import annotations

import functools
from typing import Final

from google.protobuf import timestamp_pb2
from google.protobuf.message import Message

import engine
from engine.cards import POINTS
from engine.events import HandResult, Standing
from service.tables.model import PRIVATE, TableRecord
from tute.v1 import card_pb2, score_pb2, table_pb2, view_pb2

from . import framing
from .cards import ACTIONS, CARDS, SUITS, rules_msg, sorted_cards
from .framing import varint
from .scores import cante_msg, hand_result_msg, match_result_msg, standing
from .views import _STATUS, _VISIBILITY, _completed_trick, _seat_msgs, standing_now

_V: Final = view_pb2.TableView


def _key(name: str, wire_type: int = framing.LEN) -> bytes:
    return framing.key(_V, name, wire_type)


_entry = framing.field

# TableView's fields written per call: varints and length-delimited ones.
_VERSION: Final = _key("version", framing.VARINT)
_LAST_SEQ: Final = _key("last_event_sequence", framing.VARINT)
_STATUS_KEY: Final = _key("status", framing.VARINT)
_MY_SEAT: Final = _key("my_seat", framing.VARINT)
_INVITE: Final = _key("invite_code")
_HAND: Final = _key("hand")
_GAME_NO: Final = _key("game_number", framing.VARINT)
_HAND_NO: Final = _key("hand_number", framing.VARINT)
_DEALER: Final = _key("dealer", framing.VARINT)
_TRUMP_SUIT: Final = _key("trump_suit", framing.VARINT)
_TRUMP_CARD: Final = _key("trump_card")
_TURNED_CARD: Final = _key("turned_card")
_STOCK: Final = _key("stock_size", framing.VARINT)
_CURRENT: Final = _key("current_trick")
_TURN_SEAT: Final = _key("turn_seat", framing.VARINT)
_TURN_KIND: Final = _key("turn_kind", framing.VARINT)
_DEADLINE: Final = _key("turn_deadline")
_SECONDS: Final = framing.key(timestamp_pb2.Timestamp, "seconds", framing.VARINT)
_NANOS: Final = framing.key(timestamp_pb2.Timestamp, "nanos", framing.VARINT)

_CARD_BYTES: Final = tuple(c.SerializeToString() for c in CARDS)
_TRUMP_CARD_FIELD: Final = tuple(_entry(_TRUMP_CARD, b) for b in _CARD_BYTES)
_TURNED_CARD_FIELD: Final = tuple(_entry(_TURNED_CARD, b) for b in _CARD_BYTES)


def _uint(key: bytes, n: int) -> bytes:
    """A proto3 scalar without presence: nothing when 0."""
    return key + varint(n) if n else b""


@functools.lru_cache(maxsize=4096)
def _head(table_id: str, visibility: str, preset: str, rules: engine.Rules) -> bytes:
    """What a table keeps for life: its id, rules and visibility."""
    msg = view_pb2.TableView(
        table_id=table_id,
        visibility=_VISIBILITY.get(visibility, table_pb2.VISIBILITY_UNSPECIFIED),
    )
    msg.rules.CopyFrom(rules_msg(preset, rules))
    return msg.SerializeToString()


_SEATS: dict[tuple[object, ...], bytes] = {}
"""The seats parts by what they are made of (cleared when it holds :data:`_SEATS_MAX`)."""
_SEATS_MAX: Final = 4096


def _seats(record: TableRecord) -> bytes:
    """The seats part: who sits where, and which humans are connected."""
    key = (
        record.connected,
        *[(s.occupant, s.name, s.bot_level, s.player_id) for s in record.seats],
    )
    got = _SEATS.get(key)
    if got is None:
        if len(_SEATS) >= _SEATS_MAX:
            _SEATS.clear()
        got = _SEATS[key] = view_pb2.TableView(seats=_seat_msgs(record)).SerializeToString()
    return got


@functools.lru_cache(maxsize=16384)
def _hand(mask: int) -> bytes:
    """The ``hand`` entries of a hand, in the views' order."""
    return b"".join([_entry(_HAND, _CARD_BYTES[c]) for c in sorted_cards(mask)])


@functools.lru_cache(maxsize=4096)
def _legal(legal: tuple[int, ...]) -> bytes:
    return view_pb2.TableView(
        legal_actions=[ACTIONS[a] for a in legal if a < len(ACTIONS)]
    ).SerializeToString()


@functools.lru_cache(maxsize=16384)
def _seat_hand(seat: int, size: int, public: int, tricks: int) -> bytes:
    return view_pb2.TableView(
        seat_hands=[
            view_pb2.SeatHand(
                seat=seat,
                hand_size=size,
                public_cards=[CARDS[c] for c in sorted_cards(public)],
                tricks_won=tricks,
            )
        ]
    ).SerializeToString()


@functools.lru_cache(maxsize=16384)
def _current(number: int, leader: int, cards: tuple[tuple[int, int], ...], auto: int) -> bytes:
    """The ``current_trick`` field (always present while a hand is played)."""
    trick = card_pb2.Trick(number=number, leader=leader)
    for s, c in cards:
        trick.cards.add(seat=s, card=CARDS[c], timed_out=bool(auto >> c & 1))
        trick.points += POINTS[c]
    return _entry(_CURRENT, trick.SerializeToString())


@functools.lru_cache(maxsize=16384)
def _completed(
    players: int, number: int, leader: int, cards: tuple[int, ...], winner: int, auto: int
) -> bytes:
    """A ``completed_tricks`` entry; ``auto``: the trick's cards played on timeout."""
    trick = _completed_trick(players, number, leader, cards, winner)
    if auto:
        trick = card_pb2.Trick.FromString(trick.SerializeToString())
        for played, c in zip(trick.cards, cards, strict=True):
            if auto >> c & 1:
                played.timed_out = True
    return view_pb2.TableView(completed_tricks=[trick]).SerializeToString()


@functools.lru_cache(maxsize=4096)
def _cantes(players: int, cantes: tuple[tuple[int, int, int, int], ...]) -> bytes:
    return view_pb2.TableView(cantes=[cante_msg(players, c) for c in cantes]).SerializeToString()


@functools.lru_cache(maxsize=16384)
def _scores(players: int, now: Standing) -> bytes:
    return view_pb2.TableView(scores=standing(players, now)).SerializeToString()


@functools.lru_cache(maxsize=1024)
def _last_result(rules: engine.Rules, res: HandResult) -> bytes:
    msg = view_pb2.TableView()
    msg.last_hand_result.CopyFrom(
        hand_result_msg(rules, res, engine.match_points_awarded(rules, res))
    )
    return msg.SerializeToString()


@functools.lru_cache(maxsize=1024)
def _match_result(
    players: int, winners: tuple[int, ...], reason: str, forfeited: int, now: Standing
) -> bytes:
    msg = view_pb2.TableView()
    msg.match_result.CopyFrom(
        match_result_msg(players, winners, reason, forfeited, standing(players, now))
    )
    return msg.SerializeToString()


def _games(record: TableRecord) -> bytes:
    if not record.games:
        return b""
    return view_pb2.TableView(
        game_results=[
            score_pb2.GameResult(
                game_number=g.game_no, winner_side=g.winner, scores=g.scores, by_tute=g.by_tute
            )
            for g in record.games
        ]
    ).SerializeToString()


def _deadline(t: float) -> bytes:
    """``turn_deadline`` as :func:`~service.wire.cards.set_time` sets it."""
    seconds = int(t)
    nanos = int((t - seconds) * 1e9)
    return _entry(_DEADLINE, _uint(_SECONDS, seconds) + _uint(_NANOS, nanos))


class Encoded:
    """A response message already serialized, for the gRPC port to send as it is
    (:func:`service.interceptor.passing_bytes`); HTTP callers, whose codec may be JSON, get
    :meth:`message`. ``SerializeToString`` gives the bytes, as a message's would."""

    __slots__ = ("data", "kind")

    def __init__(self, kind: type[Message], data: bytes) -> None:
        self.kind = kind
        self.data = data

    def SerializeToString(self) -> bytes:
        return self.data

    def message(self) -> Message:
        """The message the bytes are."""
        return self.kind.FromString(self.data)


def with_view(kind: type[Message], view: bytes, rest: bytes = b"") -> Encoded:
    """A response of type ``kind`` holding the view bytes ``view`` as its ``view`` field
    after the serialized fields ``rest``."""
    return Encoded(kind, rest + _entry(framing.key(kind, "view"), view))


def view_bytes(record: TableRecord, seat: int | None) -> bytes:
    """The serialized ``TableView`` of ``record`` for ``seat`` (``None``: a spectator): the
    message :func:`~service.wire.views.view_to_proto` builds, as bytes."""
    parts = [
        _head(record.table_id, record.visibility, record.preset, record.rules),
        _uint(_VERSION, record.version),
        _uint(_LAST_SEQ, record.last_seq),
        _uint(_STATUS_KEY, _STATUS.get(record.status, table_pb2.TABLE_STATUS_UNSPECIFIED)),
        _seats(record),
        _games(record),
    ]
    if seat is not None:
        parts.append(_MY_SEAT + varint(seat))
        if record.visibility == PRIVATE and record.invite_code:
            parts.append(_entry(_INVITE, record.invite_code.encode()))
    state = record.state
    if state is not None:
        _match_parts(parts, record, engine.view(state, seat))
    return b"".join(parts)


def _match_parts(parts: list[bytes], record: TableRecord, v: engine.View) -> None:
    """The match part of a view (``_match_view``'s fields)."""
    n = v.players
    playing = v.status == engine.Status.PLAYING
    parts.append(_hand(v.hand))
    parts.append(_legal(v.legal))
    seat_tricks = [0] * n
    for _, _, winner in v.history:
        seat_tricks[winner] += 1
    parts.extend(
        [_seat_hand(s, v.hand_sizes[s], v.public_cards[s], seat_tricks[s]) for s in range(n)]
    )
    parts.append(_uint(_GAME_NO, v.game_no))
    parts.append(_uint(_HAND_NO, v.hand_no))
    parts.append(_uint(_DEALER, v.dealer))
    parts.append(_uint(_TRUMP_SUIT, SUITS[v.trump]))
    parts.append(_TRUMP_CARD_FIELD[v.trump_card])
    if v.turned_card >= 0:
        parts.append(_TURNED_CARD_FIELD[v.turned_card])
    parts.append(_uint(_STOCK, v.stock_size))
    _trick_parts(parts, v, record.auto_played, current=playing or bool(v.trick))
    if v.cantes:
        parts.append(_cantes(n, v.cantes))
    now = standing_now(v)
    parts.append(_scores(n, now))
    if playing:
        parts.append(_TURN_SEAT + varint(v.turn))
        parts.append(
            _uint(_TURN_KIND, table_pb2.TURN_KIND_FOLLOW if v.trick else table_pb2.TURN_KIND_LEAD)
        )
        if record.deadline > 0:
            parts.append(_deadline(record.deadline))
    if v.last_result is not None:
        parts.append(_last_result(record.rules, v.last_result))
    if not playing:
        parts.append(_match_result(n, v.winners, v.end_reason, record.forfeited_seat, now))


def _trick_parts(parts: list[bytes], v: engine.View, auto: int, *, current: bool) -> None:
    """The trick being played (``current``) and the completed ones; ``auto``: the cards the
    server played on timeout."""
    if current:
        parts.append(_current(v.trick_no, v.leader, v.trick, auto))
    n = v.players
    for i, (leader, cards, winner) in enumerate(v.history):
        mine = 0
        if auto:
            for c in cards:
                mine |= auto & (1 << c)
        parts.append(_completed(n, i + 1, leader, cards, winner, mine))
