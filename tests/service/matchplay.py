"""Helpers for the match, race and timer tests: watchers, a match driver and the engine replay.

- :class:`Watcher` keeps one WatchTable stream open in a task and records what it receives.
- :func:`play_match` plays a whole match through the API with random legal actions.
- :func:`build_decks` rebuilds every hand's pack from what the seats received privately, and
  :func:`replay` applies the actions read from the events to a fresh engine match, checking
  the server's trick winners and hand results on the way.

Cards on the wire are turned into engine cards here (suit - 1, rank), not with
``service.wire``, so that a conversion bug on the server cannot hide itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from collections.abc import Sequence

import grpc

import engine
from engine.cards import card_of
from tute.v1 import card_pb2, event_pb2, score_pb2, service_pb2, view_pb2

from .helpers import FINISHED, Seated, Stub, auth, view_of

END_REASON = {
    "score": score_pb2.MATCH_END_REASON_SCORE,
    "tute": score_pb2.MATCH_END_REASON_TUTE,
    "forfeit": score_pb2.MATCH_END_REASON_FORFEIT,
}


def card(msg: card_pb2.Card) -> int:
    """The engine card of a wire card."""
    assert 1 <= msg.suit <= 4, msg
    return card_of(msg.suit - 1, msg.rank)


def kind(ev: event_pb2.Event) -> str:
    return ev.WhichOneof("kind") or ""


# ---------------------------------------------------------------------------------------------
# Watching
# ---------------------------------------------------------------------------------------------


class Watcher:
    """One WatchTable stream read by a background task."""

    def __init__(
        self,
        stub: Stub,
        table_id: str,
        token: str | None = None,
        resume_after: int | None = None,
    ) -> None:
        req = service_pb2.WatchTableRequest(table_id=table_id)
        if resume_after is not None:
            req.resume_after = resume_after
        self.call = stub.WatchTable(req, metadata=auth(token) if token else None)
        self.snapshots: list[view_pb2.TableView] = []
        self.events: list[event_pb2.Event] = []
        self.error: grpc.aio.AioRpcError | None = None
        self.done = False
        self._changed = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            async for msg in self.call:
                if msg.HasField("snapshot"):
                    self.snapshots.append(msg.snapshot)
                else:
                    self.events.append(msg.event)
                self._changed.set()
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                self.error = exc
        except asyncio.CancelledError:
            pass
        finally:
            self.done = True
            self._changed.set()

    @property
    def last_seq(self) -> int:
        if self.events:
            return self.events[-1].sequence
        return self.snapshots[-1].last_event_sequence if self.snapshots else -1

    async def wait_until(self, predicate, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if self.done:
                raise AssertionError(f"the stream ended early: {self.error!r}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting; got up to sequence {self.last_seq}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def wait_for_seq(self, seq: int, timeout: float = 10.0) -> None:
        await self.wait_until(lambda w: w.last_seq >= seq, timeout)

    async def close(self) -> None:
        self.call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def assert_gap_free(events: Sequence[event_pb2.Event], first: int, last: int) -> None:
    seqs = [e.sequence for e in events]
    assert seqs == list(range(first, last + 1)), f"sequences {seqs[:5]}... not {first}..{last}"
    versions = [e.table_version for e in events]
    assert versions == sorted(versions), "table versions go back"


# ---------------------------------------------------------------------------------------------
# The hand's tally, from the events
# ---------------------------------------------------------------------------------------------


class HandTally:
    """Per side, the tally of the hand being played as the public events tell it (card points
    and number of the tricks taken, points of the cantes sung, since the last HandDealt); it
    checks the ``hand_*`` fields of every HandScored and MatchEnded against it."""

    def __init__(self, players: int) -> None:
        self.sides = 2 if players == 4 else players
        self.checked = 0
        self.last: list[tuple[int, int, int]] = []
        """The tally last checked, per side: (card points, cante points, tricks)."""
        self._reset()

    def _reset(self) -> None:
        self.points = [0] * self.sides
        self.cantes = [0] * self.sides
        self.tricks = [0] * self.sides

    def see(self, ev: event_pb2.Event) -> None:
        k = kind(ev)
        if k == "hand_dealt":
            self._reset()
        elif k == "trick_taken":
            side = ev.trick_taken.winner_side
            self.points[side] += ev.trick_taken.trick.points
            self.tricks[side] += 1
        elif k == "cante_sung":
            self.cantes[ev.cante_sung.cante.side] += ev.cante_sung.cante.points
        elif k == "hand_scored":
            result = ev.hand_scored.result
            self.check(ev.hand_scored.scores, f"HandScored of hand {result.hand_number}")
            for total in result.totals:  # a played-out hand: its totals agree
                assert total.card_points == self.points[total.side]
                assert total.cante_points == self.cantes[total.side]
                assert total.tricks_won == self.tricks[total.side]
        elif k == "match_ended":
            self.check(ev.match_ended.result.scores, "MatchEnded")

    def check(self, scores: Sequence[score_pb2.SideScore], where: str) -> None:
        got = [(s.hand_card_points, s.hand_cante_points, s.hand_tricks_won) for s in scores]
        want = list(zip(self.points, self.cantes, self.tricks, strict=True))
        assert got == want, f"{where}: hand tally {got}, the events say {want}"
        self.checked += 1
        self.last = want


# ---------------------------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class PlayStats:
    final: view_pb2.TableView
    actions: int = 0
    declarations: int = 0
    with_expected_version: int = 0
    with_request_id: int = 0


def is_declaration(action: object) -> bool:
    return action.WhichOneof("kind") != "play_card"  # type: ignore[attr-defined]


async def play_match(
    stub: Stub,
    seated: Seated,
    rng: random.Random,
    *,
    prefer_declarations: bool = False,
    max_actions: int = 5000,
) -> PlayStats:
    """Play random legal actions (declarations first when asked) until the match is over.

    Every fourth action carries ``expected_version``, every fourth (offset) a ``request_id``,
    and every fourth both; each response is checked against the view it was chosen from.
    """
    tid = seated.table_id
    tokens = seated.tokens
    view = await view_of(stub, tid, tokens[min(tokens)])
    stats = PlayStats(view)
    while view.status != FINISHED:
        assert stats.actions < max_actions, "the match does not end"
        assert view.HasField("turn_seat"), "a playing table has a seat on turn"
        if prefer_declarations:
            views = {s: await view_of(stub, tid, t) for s, t in tokens.items()}
            options = [
                (s, a) for s, v in views.items() for a in v.legal_actions if is_declaration(a)
            ]
        else:
            views = {view.turn_seat: await view_of(stub, tid, tokens[view.turn_seat])}
            options = []
        if not options:
            turn = views[view.turn_seat]
            assert turn.legal_actions, "the seat on turn has no legal action"
            options = [(view.turn_seat, a) for a in turn.legal_actions]
        seat, action = rng.choice(options)
        before = views[seat]
        req = service_pb2.SubmitActionRequest(table_id=tid, action=action)
        mode = stats.actions % 4
        if mode in (1, 3):
            req.expected_version = before.version
            stats.with_expected_version += 1
        if mode in (2, 3):
            req.request_id = f"{tid}-{stats.actions}"
            stats.with_request_id += 1
        resp = await stub.SubmitAction(req, metadata=auth(tokens[seat]))
        assert resp.table_version > before.version
        assert resp.view.version == resp.table_version
        assert resp.view.my_seat == seat
        assert resp.events, "an applied action produces events"
        assert all(e.table_version == resp.table_version for e in resp.events)
        stats.actions += 1
        stats.declarations += is_declaration(action)
        view = resp.view
    stats.final = await view_of(stub, tid, tokens[min(tokens)])
    return stats


# ---------------------------------------------------------------------------------------------
# Replaying with the engine
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Hand:
    dealer: int
    trump_card: int
    hands: dict[int, list[int]] = dataclasses.field(default_factory=dict)
    draws: dict[int, int] = dataclasses.field(default_factory=dict)
    """2p: sequence number -> card drawn (face-down cards only, from the drawer's stream)."""


def build_decks(
    rules: engine.Rules, seat_events: dict[int, list[event_pb2.Event]]
) -> list[tuple[int, ...]]:
    """Every hand's pack, as RULES.md §3 deals it, from what each seat received privately."""
    n = rules.players
    hands: dict[int, _Hand] = {}
    for seat, events in seat_events.items():
        current: _Hand | None = None
        for ev in events:
            k = kind(ev)
            if k == "hand_dealt":
                hd = ev.hand_dealt
                current = hands.setdefault(hd.hand_number, _Hand(hd.dealer, card(hd.trump_card)))
                assert current.dealer == hd.dealer and current.trump_card == card(hd.trump_card)
                assert len(hd.hand) == rules.hand_size, "a seat receives its own dealt hand"
                assert list(hd.hand_sizes) == [rules.hand_size] * n
                assert hd.stock_size == (40 - 2 * rules.hand_size if n == 2 else 0)
                current.hands[seat] = [card(c) for c in hd.hand]
            elif k == "card_drawn" and ev.card_drawn.seat == seat:
                assert current is not None
                assert ev.card_drawn.HasField("card"), "the drawer sees its card"
                if not ev.card_drawn.turned_card:
                    current.draws[ev.sequence] = card(ev.card_drawn.card)
    decks: list[tuple[int, ...]] = []
    for number in sorted(hands):
        h = hands[number]
        assert number == len(decks) + 1, "hands are numbered 1, 2, ..."
        assert sorted(h.hands) == list(range(n)), "every seat saw its dealt hand"
        per_seat = {s: list(cards) for s, cards in h.hands.items()}
        if n == 2:
            dealt = 2 * rules.hand_size
            deck: list[int] = []
            for i in range(dealt):
                deck.append(per_seat[(h.dealer + 1 + i) % n].pop())
            deck.append(h.trump_card)
            deck += [h.draws[seq] for seq in sorted(h.draws)]
            seen = set(deck)
            deck += [c for c in range(40) if c not in seen]  # cards never drawn (hand cut short)
        else:
            mine = per_seat[h.dealer]
            assert h.trump_card in mine, "the dealer holds the trump card"
            mine.remove(h.trump_card)
            mine.insert(0, h.trump_card)  # popped last
            size = sum(len(c) for c in per_seat.values())
            deck = [per_seat[(h.dealer + 1 + i) % n].pop() for i in range(size)]
            assert deck[-1] == h.trump_card
        assert len(deck) == len(set(deck)) == (39 if n == 3 else 40)
        decks.append(tuple(deck))
    return decks


@dataclasses.dataclass
class Replay:
    state: engine.State
    server_tricks: list[tuple[int, int]]
    engine_tricks: list[tuple[int, int]]
    server_hands: list[tuple[object, ...]]
    engine_hands: list[tuple[object, ...]]
    timeouts: int = 0


def _hand_key(players: int, res: score_pb2.HandResult) -> tuple[object, ...]:
    winner = res.winner_side if res.HasField("winner_side") else -1
    if res.HasField("tute"):
        return (res.hand_number, winner, "tute", res.tute.seat, res.tute.rank)
    totals = tuple(t.total for t in res.totals)
    return (res.hand_number, winner, res.capote, totals)


def _engine_hand_key(res: engine.HandResult) -> tuple[object, ...]:
    if res.tute_seat >= 0:
        return (res.hand_no, res.winner, "tute", res.tute_seat, res.tute_rank)
    return (res.hand_no, res.winner, res.capote, res.totals)


def replay(  # noqa: C901 - the independent replay of a stream, one branch per event
    rules: engine.Rules,
    seat_events: dict[int, list[event_pb2.Event]],
) -> Replay:
    """Replay the match the events describe on the engine (first dealer and packs rebuilt)."""
    from engine.events import CardPlayed, HandEnded, TrickTaken

    decks = build_decks(rules, seat_events)
    events = seat_events[min(seat_events)]
    dealt = [e.hand_dealt for e in events if kind(e) == "hand_dealt"]
    rules = dataclasses.replace(rules, first_dealer=dealt[0].dealer)
    state = engine.new_match(rules, 0, decks=decks)
    out = Replay(state, [], [], [], [])
    auto_card = -1

    def apply(seat: int, action: int) -> None:
        nonlocal auto_card
        state, produced = engine.apply(out.state, seat, action)
        out.state = state
        for e in produced:
            if isinstance(e, TrickTaken):
                out.engine_tricks.append((e.trick_no, e.winner))
            elif isinstance(e, HandEnded):
                out.engine_hands.append(_engine_hand_key(e.result))
            elif isinstance(e, CardPlayed) and e.auto:
                auto_card = e.card

    for ev in events:
        k = kind(ev)
        if k == "hand_dealt":
            hd = ev.hand_dealt
            assert out.state.hand_no == hd.hand_number
            assert out.state.dealer == hd.dealer, "the dealer moves one seat per hand"
            assert out.state.trump_card == card(hd.trump_card)
        elif k == "card_played":
            cp = ev.card_played
            if cp.timed_out:
                assert auto_card == card(cp.card), "the timeout played the cheapest card"
                auto_card = -1
            else:
                apply(cp.seat, card(cp.card))
        elif k == "turn_timed_out":
            seat = ev.turn_timed_out.seat
            expected = engine.cheapest_card(out.state, seat)
            apply(seat, engine.TIMEOUT)
            assert auto_card == expected
            out.timeouts += 1
        elif k == "cante_sung":
            apply(ev.cante_sung.cante.seat, engine.SING + ev.cante_sung.cante.suit - 1)
        elif k == "tute_declared":
            t = ev.tute_declared.tute
            apply(t.seat, engine.TUTE_12 if t.rank == 12 else engine.TUTE_11)
        elif k == "trump_exchanged":
            apply(ev.trump_exchanged.seat, engine.EXCHANGE)
        elif k == "player_forfeited":
            apply(ev.player_forfeited.seat, engine.FORFEIT)
        elif k == "trick_taken":
            trick = ev.trick_taken.trick
            out.server_tricks.append((trick.number, trick.winner))
        elif k == "hand_scored":
            out.server_hands.append(_hand_key(rules.players, ev.hand_scored.result))
    return out


def assert_same_outcome(
    state: engine.State, final: view_pb2.TableView, ended: event_pb2.MatchEnded
) -> None:
    """The engine's final state agrees with the server's final view and MatchEnded event."""
    assert state.over
    for scores in (list(final.scores), list(ended.result.scores)):
        assert [s.game_score for s in scores] == list(state.game_scores)
        assert [s.games_won for s in scores] == list(state.games_won)
        assert [s.match_points for s in scores] == list(state.match_points)
    for result in (final.match_result, ended.result):
        assert list(result.winner_sides) == list(state.winners)
        assert result.reason == END_REASON[state.end_reason]
