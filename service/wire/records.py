"""Fair deals and match records on the wire: commitments and reveals in the events, the
``MatchRecord`` message of GetMatchRecord, and its replay steps (``ReplayStep``)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.record import MatchRecord, replay
from engine.shuffle import ALGORITHM
from tute.v1 import event_pb2, record_pb2

from ..tables.fair import FairLog
from .cards import rules_to_proto
from .events import FORFEIT_DISCONNECTED, FORFEIT_LEFT, EventVariants, engine_events_to_proto

_BY = {
    "player": record_pb2.RECORD_ACTOR_PLAYER,
    "bot": record_pb2.RECORD_ACTOR_BOT,
    "server": record_pb2.RECORD_ACTOR_SERVER,
}


def deal_reveal(log: FairLog, hand_no: int) -> record_pb2.DealReveal:
    """The reveal of hand ``hand_no``'s deal (only once the hand is over)."""
    return record_pb2.DealReveal(
        hand_number=hand_no,
        shuffle_algorithm=ALGORITHM,
        server_seed=log.seeds[hand_no - 1],
        commitment=log.commitment_of(hand_no),
        client_seeds=log.client_seeds,
    )


def _each(v: EventVariants) -> Sequence[event_pb2.Event]:
    return (v.public, *v.private.values())


def stamp_deals(variants: Sequence[EventVariants], log: FairLog, hand_no: int) -> None:
    """Put the fair-deal fields in one change's events: each HandDealt's commitment, each
    HandScored's reveal, and MatchEnded's reveal of a hand a forfeit cut short. ``hand_no``
    is the hand being played when the change began (the first a HandScored ends)."""
    current = hand_no
    scored = False
    for v in variants:
        kind = v.public.WhichOneof("kind")
        if kind == "hand_dealt":
            current = v.public.hand_dealt.hand_number
            scored = False
            for msg in _each(v):
                msg.hand_dealt.deal_commitment = log.commitment_of(current)
                msg.hand_dealt.shuffle_algorithm = ALGORITHM
        elif kind == "hand_scored":
            ended = v.public.hand_scored.result.hand_number or current
            scored = True
            for msg in _each(v):
                msg.hand_scored.deal.CopyFrom(deal_reveal(log, ended))
        elif kind == "match_ended" and not scored:
            for msg in _each(v):
                msg.match_ended.unfinished_deal.CopyFrom(deal_reveal(log, current))
        elif kind == "match_started":
            for msg in _each(v):
                msg.match_started.client_seeds[:] = log.client_seeds


def record_to_proto(record: MatchRecord, preset: str) -> record_pb2.MatchRecord:
    """The ``MatchRecord`` message of an engine record."""
    msg = record_pb2.MatchRecord(
        format=record.format,
        shuffle_algorithm=record.shuffle,
        engine_version=record.engine_version,
        table_id=record.table_id,
        rules=rules_to_proto(preset, record.rules),
        first_dealer=record.first_dealer,
    )
    msg.started_at.FromMilliseconds(record.started_at_ms)
    for s in record.seats:
        msg.seats.add(
            index=s.seat,
            display_name=s.name,
            bot=s.kind == "bot",
            bot_level=s.level,
            player_id=s.player_id,
        )
    for h in record.hands:
        msg.hands.add(
            hand_number=h.hand_no,
            commitment=h.commitment,
            server_seed=h.server_seed,
            client_seeds=h.client_seeds,
            pack=h.pack,
        )
    for a in record.actions:
        msg.actions.add(
            seat=a.seat, action=a.action, offset_ms=a.offset_ms, by=_BY[a.by], timed_out=a.timeout
        )
    for o in record.results.hands:
        msg.results.hands.add(
            hand_number=o.hand_no,
            totals=o.totals,
            winner_side=o.winner,
            capote=o.capote,
            tute_seat=o.tute_seat,
        )
    msg.results.winner_sides[:] = record.results.winners
    msg.results.reason = record.results.reason
    return msg


def _open_event(v: EventVariants, record: MatchRecord) -> event_pb2.Event:
    """One replayed event with every card shown: a draw as its drawer saw it; a deal without
    any hand (the record's pack deals them) and with the record's commitment."""
    msg = v.public
    kind = msg.WhichOneof("kind")
    if kind == "card_drawn":
        msg = v.for_seat(msg.card_drawn.seat)
    elif kind == "hand_dealt":
        hand = record.hands[msg.hand_dealt.hand_number - 1]
        msg.hand_dealt.deal_commitment = hand.commitment
        msg.hand_dealt.shuffle_algorithm = record.shuffle
    return msg


def replay_to_proto(record: MatchRecord) -> list[tuple[int, list[event_pb2.Event]]]:
    """Each step of a record re-run by the engine (:func:`engine.record.replay`, which raises
    :class:`engine.record.RecordError` for a record that does not replay) as the fields of a
    ``ReplayStep``: the action's index (-1 for the opening deal) and the step's events."""
    out = []
    for step in replay(record):
        a = step.action
        reason = FORFEIT_DISCONNECTED if a is not None and a.by == "server" else FORFEIT_LEFT
        variants = engine_events_to_proto(record.rules, step.events, forfeit_reason=reason)
        out.append((step.number, [_open_event(v, record) for v in variants]))
    return out
