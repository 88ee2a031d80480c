"""Whole matches played from the WatchTable streams alone: each player opens its stream, and
whenever a TurnStarted for its own seat arrives it sends one of that event's legal_actions,
once. No GetTable, no retry, no second try: every action sent is accepted, the match ends, and
the stream said everything (a cante or an exchange brings a fresh TurnStarted with the new
actions). Other seats' and the spectator's copies of TurnStarted list no action; the hand_*
fields of the end-of-hand and end-of-match scores are the hand's tally as the events tell it.
The even seats play lean: their streams batch the events (``batch_events``) and their
SubmitActions ask for no view (``omit_view``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from typing import Any

import grpc
import pytest

import engine
from service.tables import fair
from tute.v1 import event_pb2, rules_pb2, service_pb2

from .helpers import FINISHED, Stub, auth
from .matchplay import HandTally, kind

PLAYER_ACTIONS = {"card_played", "cante_sung", "tute_declared", "trump_exchanged"}


@dataclasses.dataclass
class Stats:
    sent: int = 0
    acted_events: int = 0
    refreshes: int = 0
    """TurnStarted events for the seat that just sang or exchanged, with the turn kept."""
    declarations: int = 0


class StreamPlayer:
    """One seat reading its stream from the table's first event (``resume_after = 0``), or
    a spectator (no token) from a snapshot."""

    def __init__(
        self,
        stub: Stub,
        table_id: str,
        seat: int | None,
        token: str | None,
        rng: random.Random,
        players: int,
        stats: Stats,
    ) -> None:
        self.stub = stub
        self.table_id = table_id
        self.seat = seat
        self.token = token
        self.rng = rng
        self.stats = stats
        self.tally = HandTally(players)
        self.events: list[event_pb2.Event] = []
        md = auth(token) if token else None
        self.lean = seat is not None and seat % 2 == 0
        """Even seats ask for batched events and for responses without a view."""
        req = service_pb2.WatchTableRequest(table_id=table_id, batch_events=self.lean)
        if seat is not None:
            req.resume_after = 0  # every event from the first: the table's whole story
        self.call = stub.WatchTable(req, metadata=md)

    async def run(self) -> None:
        async for msg in self.call:
            if msg.HasField("snapshot"):
                assert self.seat is None and not msg.snapshot.legal_actions
                continue
            assert msg.WhichOneof("kind") == ("events" if self.lean else "event")
            batch = list(msg.events.events) if self.lean else [msg.event]
            assert batch, "a batch holds at least one event"
            for ev in batch:
                if await self.see(ev):
                    return

    async def see(self, ev: event_pb2.Event) -> bool:
        """Take one event (act on its own TurnStarted); True at the match's end."""
        self.events.append(ev)
        self.tally.see(ev)
        k = kind(ev)
        if k == "match_ended":
            return True
        if k != "turn_started":
            return False
        turn = ev.turn_started
        if turn.seat != self.seat:
            assert not turn.legal_actions, f"{self.seat} sees seat {turn.seat}'s actions"
            return False
        assert turn.legal_actions, "the seat on turn receives its legal actions"
        if len(self.events) >= 2 and kind(self.events[-2]) in ("cante_sung", "trump_exchanged"):
            self.stats.refreshes += 1
        await self.act(list(turn.legal_actions))
        return False

    async def act(self, legal: list[Any]) -> None:
        """A declaration mostly when there is one; else a random card, keeping the 12 and 11
        of a suit together when it can (so that cantes come up)."""
        declarations = [a for a in legal if a.WhichOneof("kind") != "play_card"]
        if declarations and self.rng.random() < 0.8:
            action = self.rng.choice(declarations)
            self.stats.declarations += 1
        else:
            cards = [a.play_card for a in legal if a.HasField("play_card")]
            pairs = {c.suit for c in cards if c.rank == 12} & {
                c.suit for c in cards if c.rank == 11
            }
            keep = [
                a
                for a in legal
                if a.HasField("play_card")
                and not (a.play_card.suit in pairs and a.play_card.rank in (11, 12))
            ]
            action = self.rng.choice(keep or legal)
        self.stats.sent += 1
        resp = await self.stub.SubmitAction(
            service_pb2.SubmitActionRequest(
                table_id=self.table_id, action=action, omit_view=self.lean
            ),
            metadata=auth(self.token or ""),
        )
        assert resp.HasField("view") != self.lean, "omit_view leaves the view out"
        assert resp.events and resp.events[-1].table_version == resp.table_version


@pytest.fixture
def seeded_deals(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Deals from a generator seeded by the test's id: each match is the same every run."""
    real = engine.new_match
    rng = random.Random(request.node.name)

    def new_match(rules, seed_rng, decks=()):
        return real(rules, random.Random(rng.getrandbits(64)), decks)

    monkeypatch.setattr(engine, "new_match", new_match)
    monkeypatch.setattr(fair, "draw_seed", lambda: rng.randbytes(32))


@pytest.mark.parametrize(
    ("preset", "options"),
    [
        ("corriente-6", {}),  # 2 players: stock, draws, exchanges
        ("corriente-8", {"swap_two_for_low": True}),
        ("tres", {"target_points": 300}),
        ("parejas", {"target_points": 300}),
        # the partner may sing: the leader's actions change without its turn moving
        ("parejas", {"target_points": 300, "cante_singers": rules_pb2.CANTE_SINGERS_SIDE}),
        ("parejas-manos", {"target_match_points": 3}),
    ],
)
async def test_a_match_played_from_the_streams_alone(
    stub: Stub, seeded_deals: None, preset: str, options: dict[str, Any]
) -> None:
    rng = random.Random(f"{preset}{options}")
    stats = Stats()
    rules = rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(turn_time_s=0, **options))
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="p0")
    )
    tid = created.table_id
    players = len(created.table.seats)
    spectator = StreamPlayer(stub, tid, None, None, rng, players, stats)
    clients = [
        spectator,
        StreamPlayer(stub, tid, created.seat, created.seat_token, rng, players, stats),
    ]
    tasks = [asyncio.create_task(c.run()) for c in clients]
    try:
        for _ in range(players - 1):
            joined = await stub.JoinTable(
                service_pb2.JoinTableRequest(display_name="p", table_id=tid)
            )
            clients.append(
                StreamPlayer(stub, tid, joined.seat, joined.seat_token, rng, players, stats)
            )
            tasks.append(asyncio.create_task(clients[-1].run()))
        try:
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
        except TimeoutError:
            last = [kind(e) for e in spectator.events[-3:]]
            raise AssertionError(
                f"the match stalled after {last}: a seat on turn never got "
                "a TurnStarted with its actions"
            ) from None
    finally:
        for c in clients:
            c.call.cancel()
        for t in tasks:
            t.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await asyncio.gather(*tasks, return_exceptions=True)

    view = (await stub.GetTable(service_pb2.GetTableRequest(table_id=tid))).view
    assert view.status == FINISHED
    assert spectator.events[-1].sequence == view.last_event_sequence
    acted = [
        e
        for e in spectator.events
        if kind(e) in PLAYER_ACTIONS and not (kind(e) == "card_played" and e.card_played.timed_out)
    ]
    assert stats.sent == len(acted), "one accepted SubmitAction per action"
    assert stats.sent > 20 and stats.declarations >= 1
    assert stats.refreshes >= 1, "no cante or exchange was followed by a fresh TurnStarted"
    for c in clients:
        assert c.tally.checked >= 2, "scores of a hand and of the match were checked"
