"""Match records: everything needed to check a finished match's deals and replay it.

A :class:`MatchRecord` holds the rules, the engine and shuffle versions, the seats (players,
bots with their level), every hand's commitment, revealed server seed, client seeds and pack,
every action in the engine's text form with its time offset and who made it, and the results.
It encodes to plain JSON (:func:`record_to_json`, :func:`record_from_json`).

:func:`replay` re-runs the engine: it checks every deal with :func:`engine.shuffle.verify`,
applies every action, and rejects (:class:`RecordError`) a record that does not replay to its
own results. A record is never shown from its stored results alone.

A server builds a record as the match goes: :func:`start_record` when it begins,
:func:`add_hand` for each hand's deal (the seed stays server-side until the hand ends), and
:func:`add_action` for each applied action with the events it produced.

>>> from engine import FORFEIT, Rules, apply, new_match
>>> rules = Rules.preset("corriente-6", first_dealer=0)
>>> rec = start_record("t1", rules, 0, (bot_seat(0, "random"), player_seat(1, "Ana")), "0.1.0")
>>> rec = add_hand(rec, 1, bytes(32), ("", "ana"))
>>> state = new_match(rules, 0, decks=[pack_of(rec.hands[0])])
>>> state, events = apply(state, 1, FORFEIT)
>>> rec = add_action(rec, 1, FORFEIT, 1500, "server", events)
>>> [step.action.action for step in replay(rec)[1:]]
['forfeit']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

from .actions import action_text, parse_action
from .cards import Card, card_text, parse_card
from .errors import TuteError
from .events import Event, HandEnded, MatchEnded
from .game import apply, new_match, opening_events
from .rules import RANDOM_DEALER, Rules
from .shuffle import ALGORITHM, FairnessError, commitment, shuffle, verify
from .state import State

FORMAT: Final = "tute-record-v1"
"""The name and version of the record format."""
BY_VALUES: Final = ("player", "bot", "server")
"""Who made an action: the seat's player, a bot, or the server (a timeout, a forfeit)."""
SEAT_KINDS: Final = ("player", "bot")

RECORD_REASONS: tuple[str, ...] = (
    "bad_record",
    "unknown_format",
    "unknown_shuffle",
    "commitment_mismatch",
    "pack_mismatch",
    "bad_seed",
    "bad_commitment",
    "bad_client_seed",
    "bad_hand_no",
    "illegal_action",
    "missing_hand",
    "extra_hand",
    "match_not_over",
    "results_mismatch",
)
"""Every reason a :class:`RecordError` may carry."""


class RecordError(TuteError):
    """A record that is malformed, whose deals do not check out, or that does not replay.

    ``reason`` is one of :data:`RECORD_REASONS`: the :class:`~engine.shuffle.FairnessError`
    reasons for a deal, ``illegal_action`` for an action the engine refuses,
    ``results_mismatch`` when the replay ends with other results than the record's.
    """


class SeatRecord(NamedTuple):
    """Who sat at ``seat``: a player (``name``, ``player_id`` when known) or a bot (``level``)."""

    seat: int
    kind: str
    """``player`` or ``bot``."""
    name: str
    level: str = ""
    """A bot's level; empty for a player."""
    player_id: str = ""
    """The player's id where players have accounts; empty otherwise."""


class HandRecord(NamedTuple):
    """One hand's deal: the commitment published before it, the seed revealed after it."""

    hand_no: int
    commitment: str
    """SHA-256 commitment to the server seed, hex (docs/fair-deals.md)."""
    server_seed: str
    """The 32-byte server seed, hex."""
    client_seeds: tuple[str, ...]
    """Per seat, in seat order: its client seed, empty when it gave none."""
    pack: tuple[str, ...]
    """The hand's pack in deal order, as card texts (``3E``)."""


class ActionRecord(NamedTuple):
    """An action applied to the match: the acting seat, the action's text, when and by whom."""

    seat: int
    action: str
    """The engine's text form (``3E``, ``sing O``, ``tute 12``, ``exchange``, ``timeout``,
    ``forfeit``)."""
    offset_ms: int
    """Milliseconds from the start of the match."""
    by: str
    """``player`` (its own move, or leaving), ``bot``, or ``server`` (a timeout, or the
    forfeit of a player who stayed disconnected)."""

    @property
    def timeout(self) -> bool:
        """The turn timed out and the server played the cheapest legal card."""
        return self.action == "timeout"


class HandOutcome(NamedTuple):
    """How one hand ended (engine.HandResult, the part a record keeps)."""

    hand_no: int
    totals: tuple[int, ...]
    """Per side: card points + last trick + cantes."""
    winner: int
    """The winning side, -1 for a tie."""
    capote: bool
    tute_seat: int
    """The seat whose tute ended the hand, -1 for none."""


class Results(NamedTuple):
    """The match's results: filled hand by hand, complete once ``reason`` is set."""

    hands: tuple[HandOutcome, ...] = ()
    winners: tuple[int, ...] = ()
    """The winning sides (4p: side 0 is seats 0 and 2)."""
    reason: str = ""
    """``score``, ``tute`` or ``forfeit`` once the match is over; empty before."""


class MatchRecord(NamedTuple):
    """A match's record (format :data:`FORMAT`)."""

    table_id: str
    rules: Rules
    first_dealer: int
    """The dealer of hand 1 (drawn by the server when the rules say ``random``)."""
    seats: tuple[SeatRecord, ...]
    engine_version: str
    hands: tuple[HandRecord, ...] = ()
    actions: tuple[ActionRecord, ...] = ()
    results: Results = Results()
    started_at_ms: int = 0
    """When the match began, milliseconds since the Unix epoch (0: not recorded)."""
    format: str = FORMAT
    shuffle: str = ALGORITHM

    @property
    def over(self) -> bool:
        return self.results.reason != ""


class ReplayStep(NamedTuple):
    """One step of a replay: the state after ``action`` (``None``: the first deal)."""

    number: int
    """The action's index in ``record.actions``; -1 for the first deal."""
    action: ActionRecord | None
    state: State
    events: tuple[Event, ...]
    """The engine's events (unredacted: redact them for a seat's view)."""


# -- building a record ----------------------------------------------------------------------


def player_seat(seat: int, name: str, player_id: str = "") -> SeatRecord:
    return SeatRecord(seat, "player", name, "", player_id)


def bot_seat(seat: int, level: str, name: str = "") -> SeatRecord:
    return SeatRecord(seat, "bot", name or f"bot ({level})", level, "")


def start_record(
    table_id: str,
    rules: Rules,
    first_dealer: int,
    seats: Sequence[SeatRecord],
    engine_version: str,
    started_at_ms: int = 0,
) -> MatchRecord:
    """The record of a match that begins now (no hands, no actions yet)."""
    return MatchRecord(
        table_id=table_id,
        rules=rules,
        first_dealer=first_dealer,
        seats=tuple(seats),
        engine_version=engine_version,
        started_at_ms=started_at_ms,
    )


def add_hand(
    record: MatchRecord, hand_no: int, seed: bytes, client_seeds: Sequence[str]
) -> MatchRecord:
    """The record with hand ``hand_no`` shuffled from ``seed`` and the client seeds."""
    pack = shuffle(seed, client_seeds, hand_no, record.rules)
    hand = HandRecord(
        hand_no=hand_no,
        commitment=commitment(seed).hex(),
        server_seed=seed.hex(),
        client_seeds=tuple(client_seeds),
        pack=tuple(card_text(c) for c in pack),
    )
    return record._replace(hands=(*record.hands, hand))


def pack_of(hand: HandRecord) -> tuple[Card, ...]:
    """A hand record's pack as card numbers (give it to ``new_match``/``with_deck``)."""
    return tuple(parse_card(t) for t in hand.pack)


def add_action(
    record: MatchRecord, seat: int, action: int, offset_ms: int, by: str, events: Iterable[Event]
) -> MatchRecord:
    """The record with an applied action and the results its events report."""
    entry = ActionRecord(seat, action_text(action), offset_ms, by)
    return record._replace(
        actions=(*record.actions, entry), results=_with_events(record.results, events)
    )


def _with_events(results: Results, events: Iterable[Event]) -> Results:
    for event in events:
        if isinstance(event, HandEnded):
            r = event.result
            outcome = HandOutcome(r.hand_no, tuple(r.totals), r.winner, r.capote, r.tute_seat)
            results = results._replace(hands=(*results.hands, outcome))
        elif isinstance(event, MatchEnded):
            results = results._replace(winners=tuple(event.winners), reason=event.reason)
    return results


# -- replay -----------------------------------------------------------------------------------


def replay(record: MatchRecord) -> tuple[ReplayStep, ...]:  # noqa: C901 - a record's every check before it is replayed, in order
    """Every step of the match, re-run by the engine from the record's packs and actions.

    Raises :class:`RecordError` when a deal does not verify, an action is illegal, a hand was
    dealt without its pack (or a pack was never dealt), the match does not end, or it ends with
    other results than the record's.
    """
    if record.format != FORMAT:
        raise RecordError("unknown_format", f"unknown record format {record.format!r}")
    if record.shuffle != ALGORITHM:
        raise RecordError("unknown_shuffle", f"unknown shuffle algorithm {record.shuffle!r}")
    rules = record.rules
    n = rules.players
    if len(record.seats) != n or [s.seat for s in record.seats] != list(range(n)):
        raise RecordError("bad_record", f"seats: one per seat 0..{n - 1}, in order")
    if not 0 <= record.first_dealer < n:
        raise RecordError("bad_record", "first_dealer: not a seat")
    if rules.first_dealer not in (RANDOM_DEALER, record.first_dealer):
        raise RecordError("bad_record", "first_dealer: the rules name another seat")
    packs = _verified_packs(record)
    state = new_match(dataclasses.replace(rules, first_dealer=record.first_dealer), 0, packs)
    steps = [ReplayStep(-1, None, state, opening_events(state))]
    results = Results()
    last_offset = 0
    for i, entry in enumerate(record.actions):
        if entry.by not in BY_VALUES or entry.offset_ms < last_offset:
            raise RecordError("bad_record", f"action {i}: bad 'by' or a time before the last")
        last_offset = entry.offset_ms
        try:
            state, events = apply(state, entry.seat, parse_action(entry.action))
        except TuteError as exc:
            raise RecordError(
                "illegal_action", f"action {i} ({entry.action!r} by seat {entry.seat}): {exc}"
            ) from exc
        if state.hand_no > len(packs):
            raise RecordError("missing_hand", f"action {i} deals hand {state.hand_no}: no pack")
        results = _with_events(results, events)
        steps.append(ReplayStep(i, entry, state, events))
    if not state.over:
        raise RecordError("match_not_over", "the actions end before the match does")
    if state.hand_no != len(packs):
        raise RecordError("extra_hand", f"{len(packs)} hands recorded, {state.hand_no} dealt")
    if results != record.results:
        raise RecordError("results_mismatch", "the replay ends with other results")
    return tuple(steps)


def _verified_packs(record: MatchRecord) -> tuple[tuple[Card, ...], ...]:
    packs = []
    for k, hand in enumerate(record.hands):
        if hand.hand_no != k + 1:
            raise RecordError("bad_record", f"hands: hand {k + 1} is numbered {hand.hand_no}")
        if len(hand.client_seeds) != record.rules.players:
            raise RecordError("bad_record", f"hand {k + 1}: one client seed per seat")
        try:
            pack = pack_of(hand)
            packs.append(
                verify(
                    bytes.fromhex(hand.commitment),
                    bytes.fromhex(hand.server_seed),
                    hand.client_seeds,
                    hand.hand_no,
                    record.rules,
                    pack,
                )
            )
        except FairnessError as unfair:
            raise RecordError(unfair.reason, unfair.message) from unfair
        except (TuteError, ValueError) as bad:  # (one name per clause: mypyc types each)
            raise RecordError("bad_record", f"hand {k + 1}: {bad}") from bad
    if not packs:
        raise RecordError("bad_record", "hands: none recorded")
    return tuple(packs)


# -- JSON -------------------------------------------------------------------------------------


def record_to_json(record: MatchRecord) -> dict[str, Any]:
    """The record as JSON-ready data (dicts, lists, strings, ints, bools)."""
    return {
        "format": record.format,
        "shuffle": record.shuffle,
        "engine_version": record.engine_version,
        "table_id": record.table_id,
        "started_at_ms": record.started_at_ms,
        "rules": record.rules.options(),
        "first_dealer": record.first_dealer,
        "seats": [s._asdict() for s in record.seats],
        "hands": [
            {**h._asdict(), "client_seeds": list(h.client_seeds), "pack": list(h.pack)}
            for h in record.hands
        ],
        "actions": [a._asdict() for a in record.actions],
        "results": {
            "hands": [{**h._asdict(), "totals": list(h.totals)} for h in record.results.hands],
            "winners": list(record.results.winners),
            "reason": record.results.reason,
        },
    }


def _get(obj: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise RecordError("bad_record", f"{where}: missing {key!r}")
    value = obj[key]
    if kind is int and (type(value) is not int):
        raise RecordError("bad_record", f"{where}.{key}: not an integer")
    if kind is not int and not isinstance(value, kind):
        raise RecordError("bad_record", f"{where}.{key}: not a {kind.__name__}")
    return value


def _ints(obj: Any, key: str, where: str) -> tuple[int, ...]:
    values = _get(obj, key, list, where)
    if any(type(v) is not int for v in values):
        raise RecordError("bad_record", f"{where}.{key}: not a list of integers")
    return tuple(values)


def _strs(obj: Any, key: str, where: str) -> tuple[str, ...]:
    values = _get(obj, key, list, where)
    if any(not isinstance(v, str) for v in values):
        raise RecordError("bad_record", f"{where}.{key}: not a list of strings")
    return tuple(values)


def record_from_json(obj: Any) -> MatchRecord:
    """The record :func:`record_to_json` encoded; :class:`RecordError` ``bad_record`` if not one.

    It checks the shape only: :func:`replay` checks the content.
    """
    fmt = _get(obj, "format", str, "record")
    if fmt != FORMAT:
        raise RecordError("unknown_format", f"unknown record format {fmt!r}")
    try:
        rules = Rules.from_options(_get(obj, "rules", dict, "record"))
    except TuteError as exc:
        raise RecordError("bad_record", f"rules: {exc}") from exc
    seats = tuple(
        SeatRecord(
            _get(s, "seat", int, f"seats[{i}]"),
            _get(s, "kind", str, f"seats[{i}]"),
            _get(s, "name", str, f"seats[{i}]"),
            _get(s, "level", str, f"seats[{i}]"),
            _get(s, "player_id", str, f"seats[{i}]"),
        )
        for i, s in enumerate(_get(obj, "seats", list, "record"))
    )
    if any(s.kind not in SEAT_KINDS for s in seats):
        raise RecordError("bad_record", "seats: kind is 'player' or 'bot'")
    hands = tuple(
        HandRecord(
            _get(h, "hand_no", int, f"hands[{i}]"),
            _get(h, "commitment", str, f"hands[{i}]"),
            _get(h, "server_seed", str, f"hands[{i}]"),
            _strs(h, "client_seeds", f"hands[{i}]"),
            _strs(h, "pack", f"hands[{i}]"),
        )
        for i, h in enumerate(_get(obj, "hands", list, "record"))
    )
    actions = tuple(
        ActionRecord(
            _get(a, "seat", int, f"actions[{i}]"),
            _get(a, "action", str, f"actions[{i}]"),
            _get(a, "offset_ms", int, f"actions[{i}]"),
            _get(a, "by", str, f"actions[{i}]"),
        )
        for i, a in enumerate(_get(obj, "actions", list, "record"))
    )
    res = _get(obj, "results", dict, "record")
    results = Results(
        hands=tuple(
            HandOutcome(
                _get(h, "hand_no", int, f"results.hands[{i}]"),
                _ints(h, "totals", f"results.hands[{i}]"),
                _get(h, "winner", int, f"results.hands[{i}]"),
                _get(h, "capote", bool, f"results.hands[{i}]"),
                _get(h, "tute_seat", int, f"results.hands[{i}]"),
            )
            for i, h in enumerate(_get(res, "hands", list, "results"))
        ),
        winners=_ints(res, "winners", "results"),
        reason=_get(res, "reason", str, "results"),
    )
    return MatchRecord(
        table_id=_get(obj, "table_id", str, "record"),
        rules=rules,
        first_dealer=_get(obj, "first_dealer", int, "record"),
        seats=seats,
        engine_version=_get(obj, "engine_version", str, "record"),
        hands=hands,
        actions=actions,
        results=results,
        started_at_ms=_get(obj, "started_at_ms", int, "record"),
        format=fmt,
        shuffle=_get(obj, "shuffle", str, "record"),
    )
