"""Match records on the client side: read one, check it end to end, step through it.

A record comes from a file (the engine's JSON form, :func:`engine.record.record_to_json`) or
from a server (``GetMatchRecord``, converted by :func:`record_from_proto`). :func:`check`
verifies every hand's deal and replays the match with the engine (:func:`engine.record.replay`),
so what :func:`replay_lines` shows is what the engine re-ran, never the stored results alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import engine
from engine.cards import mask_text
from engine.events import (
    CanteSung,
    CardDrawn,
    CardPlayed,
    Event,
    GameEnded,
    HandDealt,
    HandEnded,
    MatchEnded,
    PlayerForfeited,
    TrickTaken,
    TrumpExchanged,
    TuteDeclared,
    redact,
)
from engine.record import (
    ActionRecord,
    HandOutcome,
    HandRecord,
    MatchRecord,
    RecordError,
    ReplayStep,
    Results,
    SeatRecord,
    record_from_json,
    record_to_json,
    replay,
)
from tute.v1 import record_pb2

from .bot import engine_rules

_BY = {
    record_pb2.RECORD_ACTOR_PLAYER: "player",
    record_pb2.RECORD_ACTOR_BOT: "bot",
    record_pb2.RECORD_ACTOR_SERVER: "server",
}


def record_from_proto(msg: record_pb2.MatchRecord) -> MatchRecord:
    """The engine's record of a ``MatchRecord`` message (no check: :func:`check` does that)."""
    if msg.actions and any(a.by not in _BY for a in msg.actions):
        raise RecordError("bad_record", "actions: an action without its author")
    return MatchRecord(
        table_id=msg.table_id,
        rules=engine_rules(msg.rules),
        first_dealer=msg.first_dealer,
        seats=tuple(
            SeatRecord(
                s.index, "bot" if s.bot else "player", s.display_name, s.bot_level, s.player_id
            )
            for s in msg.seats
        ),
        engine_version=msg.engine_version,
        hands=tuple(
            HandRecord(
                h.hand_number, h.commitment, h.server_seed, tuple(h.client_seeds), tuple(h.pack)
            )
            for h in msg.hands
        ),
        actions=tuple(ActionRecord(a.seat, a.action, a.offset_ms, _BY[a.by]) for a in msg.actions),
        results=Results(
            hands=tuple(
                HandOutcome(h.hand_number, tuple(h.totals), h.winner_side, h.capote, h.tute_seat)
                for h in msg.results.hands
            ),
            winners=tuple(msg.results.winner_sides),
            reason=msg.results.reason,
        ),
        started_at_ms=msg.started_at.ToMilliseconds() if msg.HasField("started_at") else 0,
        format=msg.format,
        shuffle=msg.shuffle_algorithm,
    )


def load(path: str) -> MatchRecord:
    """A record file (the engine's JSON form); :class:`RecordError` ``bad_record`` if not one."""
    try:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RecordError("bad_record", f"{path}: not a JSON record ({exc})") from None
    return record_from_json(data)


def save(record: MatchRecord, path: str) -> None:
    Path(path).write_text(json.dumps(record_to_json(record), indent=1) + "\n", encoding="utf-8")


def check(record: MatchRecord) -> tuple[tuple[ReplayStep, ...], list[str]]:
    """Every step of the replay and a report, line by line; :class:`RecordError` if it fails."""
    steps = replay(record)
    lines = [
        f"record of table {record.table_id}: {record.format}, {record.shuffle}, "
        f"played by tute {record.engine_version}",
    ]
    lines.extend(
        f"hand {hand.hand_no}: the seed matches commitment {hand.commitment[:16]}…"
        " and shuffles to the recorded pack"
        for hand in record.hands
    )
    lines.append(
        f"{len(record.actions)} actions replayed: every one legal, the results match "
        f"({_results_text(record)})"
    )
    return steps, lines


def _results_text(record: MatchRecord) -> str:
    sides = " and ".join(_side_name(record, s) for s in record.results.winners) or "nobody"
    return f"{sides} won, by {record.results.reason}"


def _side_name(record: MatchRecord, side: int) -> str:
    n = record.rules.players
    seats = [s for s in record.seats if (s.seat % 2 if n == 4 else s.seat) == side]
    return " & ".join(s.name for s in seats)


def _seat_name(record: MatchRecord, seat: int) -> str:
    s = record.seats[seat]
    if s.kind == "bot" and s.level not in s.name:
        return f"{s.name} (bot {s.level})"
    return s.name


def _event_line(record: MatchRecord, ev: Event) -> str | None:
    """A line about an engine event worth showing between actions; None for the others."""
    name = _seat_name
    if isinstance(ev, TrickTaken):
        return f"  trick {ev.trick_no} to {name(record, ev.winner)} ({ev.points} points)"
    if isinstance(ev, CanteSung):
        return f"  {name(record, ev.seat)} sings {ev.points} in {engine.cards.SUIT_NAMES[ev.suit]}"
    if isinstance(ev, TuteDeclared):
        return f"  {name(record, ev.seat)} declares tute: {mask_text(ev.cards)}"
    if isinstance(ev, TrumpExchanged):
        return (
            f"  {name(record, ev.seat)} exchanges {engine.card_text(ev.given)} for "
            f"{engine.card_text(ev.taken)}"
        )
    if isinstance(ev, CardPlayed) and ev.auto:
        return f"  the server plays {engine.card_text(ev.card)} for {name(record, ev.seat)}"
    if isinstance(ev, CardDrawn) and ev.card is not None:
        return f"  {name(record, ev.seat)} draws {engine.card_text(ev.card)}"
    if isinstance(ev, HandEnded):
        r = ev.result
        totals = ", ".join(f"{_side_name(record, s)} {t}" for s, t in enumerate(r.totals))
        return f"hand {r.hand_no} ends: {totals}" + (" (capote)" if r.capote else "")
    if isinstance(ev, GameEnded):
        return f"game {ev.game_no} to {_side_name(record, ev.winner)}"
    if isinstance(ev, PlayerForfeited):
        return f"  {name(record, ev.seat)} forfeits"
    if isinstance(ev, MatchEnded):
        winners = " and ".join(_side_name(record, s) for s in ev.winners)
        return f"match over: {winners} won ({ev.reason})"
    return None


def _deal_lines(record: MatchRecord, ev: HandDealt, seat: int | None) -> list[str]:
    hands = tuple(h if seat is None or s == seat else None for s, h in enumerate(ev.hands))
    lines = [
        f"hand {ev.hand_no} (game {ev.game_no}): {_seat_name(record, ev.dealer)} deals, "
        f"trump {engine.card_text(ev.trump_card)}, commitment "
        f"{record.hands[ev.hand_no - 1].commitment[:16]}…"
    ]
    for s, mask in enumerate(hands):
        if mask is not None:
            lines.append(f"  {_seat_name(record, s)}: {mask_text(mask)}")
    return lines


def replay_lines(
    record: MatchRecord, steps: tuple[ReplayStep, ...], seat: int | None
) -> Iterator[tuple[int, str]]:
    """(hand number, line) for every step, as ``seat`` saw it (``None``: every hand open)."""
    hand = 1
    for step in steps:
        a = step.action
        if a is not None:
            shown = "timeout (the cheapest card)" if a.timeout else a.action
            by = " (by the server)" if a.by == "server" and not a.timeout else ""
            yield hand, f"  [{a.offset_ms / 1000:7.1f} s] {_seat_name(record, a.seat)}: {shown}{by}"
        for ev in step.events:
            if isinstance(ev, HandDealt):
                hand = ev.hand_no
                for text in _deal_lines(record, ev, seat):
                    yield hand, text
                continue
            line = _event_line(record, ev if seat is None else redact(ev, seat))
            if line is not None:
                yield hand, line
