"""Hidden information: nothing the server sends to a seat (or a spectator) holds a card that
audience may not see (RULES.md §3), over hundreds of random matches of every preset; rejected
actions name no hidden card; the server's log holds no card and no seat token.

Every seat is a test player, so the test knows every hand; the oracle of
:mod:`tests.service.visibility` records each state the server commits and judges every ``Card``
message received (views from GetTable, JoinTable and SubmitAction, SubmitAction's events,
every WatchTable snapshot and event) against the version it was built from.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

import engine
from engine.cards import BIT, SUIT_OF, card_of, card_text, cards_of
from engine.game import pack_for
from service import wire
from service.server import Server
from tests.support.clock import FakeClock
from tests.support.wait import eventually
from tute.v1 import (
    action_pb2,
    card_pb2,
    event_pb2,
    rules_pb2,
    service_pb2,
    table_pb2,
    view_pb2,
)

from .helpers import Stub, auth
from .visibility import LogBuffer, Oracle, card_texts_in

PRESETS = sorted(engine.PRESETS)
FINISHED = table_pb2.TABLE_STATUS_FINISHED


@pytest.fixture
def oracle(server: Server, monkeypatch: pytest.MonkeyPatch) -> Oracle:
    o = Oracle()
    o.install(monkeypatch, server.app.store)
    return o


# ---------------------------------------------------------------------------------------------
# random rules, rigged deals
# ---------------------------------------------------------------------------------------------


def random_options(preset: str, rng: random.Random) -> rules_pb2.RuleOptions:
    """Short matches (one or two hands mostly) with the options that reveal cards varied."""
    base = engine.PRESETS[preset]
    o = rules_pb2.RuleOptions(turn_time_s=0)
    if base.scoring is engine.rules.Scoring.POINTS:
        o.target_points = rng.choice([1, 1, 1, 120])
    else:
        o.target_match_points = rng.choice([1, 1, 2])
    if rng.random() < 0.4:
        o.cantes_per_trick = rules_pb2.CANTES_PER_TRICK_UNLIMITED
    if rng.random() < 0.3:
        o.forty_before_twenty = rules_pb2.FORTY_BEFORE_TWENTY_OFF
    if rng.random() < 0.2:
        o.tute_requires_no_prior_cante = True
    if rng.random() < 0.2:
        o.cante_requires_held_at_win = True
    if base.players == 4 and rng.random() < 0.4:
        o.cante_singers = rules_pb2.CANTE_SINGERS_SIDE
    if base.players == 2:
        if rng.random() < 0.4:
            o.swap_two_for_low = True
        if rng.random() < 0.4:
            o.swap_requires_trick_won = False
        if rng.random() < 0.2:
            o.stock_phase_rules = rules_pb2.STOCK_PHASE_RULES_STRICT
    if rng.random() < 0.5:
        o.first_dealer = rng.randrange(base.players)
    return o


def rigged_deck(rules: engine.Rules, rng: random.Random) -> list[int]:
    """A shuffled pack in which one seat is dealt all four 12s or 11s (a tute is possible)
    and, in 2p, the 7 and 2 of some suit (an exchange is likely)."""
    pack = list(pack_for(rules))
    rng.shuffle(pack)
    n = rules.players
    dealt = 2 * rules.hand_size_2p if n == 2 else len(pack)
    k = rng.randrange(n)
    slots = [i for i in range(dealt) if i % n == k]
    rng.shuffle(slots)
    rank = rng.choice([11, 12])
    wanted = [card_of(s, rank) for s in range(4)]
    for slot, card in zip(slots, wanted, strict=False):
        j = pack.index(card)
        pack[slot], pack[j] = pack[j], pack[slot]
    return pack


@contextlib.contextmanager
def rigged_first_hands(monkeypatch: pytest.MonkeyPatch, rng: random.Random) -> Iterator[None]:
    """Matches started while active may get a rigged first hand (engine.new_match's decks)."""
    real = engine.new_match

    def new_match(rules, seed_rng, decks=()):
        if rng.random() < 0.4:  # instead of the shuffled first pack
            decks = [rigged_deck(rules, rng)]
        return real(rules, seed_rng, decks)

    monkeypatch.setattr(engine, "new_match", new_match)
    try:
        yield
    finally:
        monkeypatch.setattr(engine, "new_match", real)


# ---------------------------------------------------------------------------------------------
# watchers
# ---------------------------------------------------------------------------------------------


class Watcher:
    """A WatchTable stream read into a list in the background; with ``batch``, one that asks
    for its events in batches (``batch_events``)."""

    def __init__(
        self,
        stub: Stub,
        table_id: str,
        audience: int | None,
        token: str | None,
        resume_after: int | None = None,
        *,
        batch: bool = False,
    ) -> None:
        self.table_id = table_id
        self.audience = audience
        self.resume_after = resume_after
        self.batch = batch
        self.messages: list[service_pb2.WatchTableResponse] = []
        self.last_seq = -1
        self._received = asyncio.Event()
        self.ended = False
        req = service_pb2.WatchTableRequest(table_id=table_id, batch_events=batch)
        if resume_after is not None:
            req.resume_after = resume_after
            self.last_seq = resume_after
        self.call = stub.WatchTable(req, metadata=auth(token) if token else None)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            async for msg in self.call:
                self.messages.append(msg)
                if msg.HasField("snapshot"):
                    self.last_seq = msg.snapshot.last_event_sequence
                elif msg.HasField("events"):
                    self.last_seq = msg.events.events[-1].sequence
                else:
                    self.last_seq = msg.event.sequence
                self._received.set()
        finally:
            self.ended = True
            self._received.set()  # the stream ended: waiters look again

    async def _wait_until_seq(self, seq: int) -> None:
        """Until the stream has received up to ``seq`` or has ended."""
        while self.last_seq < seq and not self.ended:
            self._received.clear()
            await self._received.wait()

    async def wait_seq(self, seq: int, timeout: float = 10.0) -> None:
        """Until the stream has received up to ``seq`` (it stays open)."""
        async with asyncio.timeout(timeout):
            await self._wait_until_seq(seq)
        assert self.last_seq >= seq, "the stream ended"

    async def finish(self, final_seq: int, timeout: float = 10.0) -> None:
        try:
            async with asyncio.timeout(timeout):
                await self._wait_until_seq(final_seq)
        except TimeoutError:
            raise AssertionError(f"watcher stuck at {self.last_seq} < {final_seq}") from None
        self.call.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await self.task
        assert self.last_seq == final_seq

    def events(self) -> list[event_pb2.Event]:
        """The events received (of every batch), in order."""
        out: list[event_pb2.Event] = []
        for m in self.messages:
            if m.HasField("events"):
                out += m.events.events
            elif m.HasField("event"):
                out.append(m.event)
        return out

    def check(self, oracle: Oracle) -> None:
        msgs = self.messages
        where = f"WatchTable({'resume' if self.resume_after is not None else 'snapshot'})"
        if self.resume_after is None:
            assert msgs and msgs[0].HasField("snapshot"), "a stream starts with a snapshot"
            oracle.check_view(msgs[0].snapshot, self.audience, where)
            seq = msgs[0].snapshot.last_event_sequence
            msgs = msgs[1:]
        else:
            seq = self.resume_after
        events = []
        kind = "events" if self.batch else "event"
        for m in msgs:
            assert m.WhichOneof("kind") == kind, f"only the first message is a snapshot: {kind}"
            batch = list(m.events.events) if self.batch else [m.event]
            assert batch, "a batch holds at least one event"
            for ev in batch:
                assert ev.sequence == seq + 1, "gap-free sequence"
                seq = ev.sequence
            events += batch
        oracle.check_events(self.table_id, events, self.audience, where)


# ---------------------------------------------------------------------------------------------
# one match
# ---------------------------------------------------------------------------------------------


@dataclass
class Stats:
    matches: int = 0
    actions: int = 0
    rejected: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    not_held: set[tuple[int, str, str]] = field(default_factory=set)
    tokens: set[str] = field(default_factory=set)

    def saw(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


def error_texts(err: grpc.aio.AioRpcError) -> list[str]:
    """The status message and every string of its google.rpc details."""
    texts = [err.details() or ""]
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    if status is not None:
        texts.append(status.message)
        for detail in status.details:
            for cls in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest):
                if detail.Is(cls.DESCRIPTOR):
                    msg = cls()
                    detail.Unpack(msg)
                    texts.append(str(msg))
    return texts


def reason_of(err: grpc.aio.AioRpcError) -> str:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info.reason
    return ""


class MatchRunner:
    def __init__(
        self, stub: Stub, oracle: Oracle, rng: random.Random, stats: Stats, preset: str
    ) -> None:
        self.stub = stub
        self.oracle = oracle
        self.rng = rng
        self.stats = stats
        self.preset = preset
        self.tokens: dict[int, str] = {}
        self.watchers: list[Watcher] = []
        self.table_id = ""
        self.illegal_budget = 3

    async def get(self, audience: int | None, where: str = "GetTable") -> view_pb2.TableView:
        token = self.tokens.get(audience) if audience is not None else None
        resp = await self.stub.GetTable(
            service_pb2.GetTableRequest(table_id=self.table_id),
            metadata=auth(token) if token else None,
        )
        self.oracle.check_view(resp.view, audience, where)
        return resp.view

    async def setup(self) -> int:
        rng = self.rng
        options = random_options(self.preset, rng)
        n = engine.PRESETS[self.preset].players
        private = rng.random() < 0.3
        first = rng.randrange(n)
        created = await self.stub.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(preset=self.preset, options=options),
                visibility=table_pb2.VISIBILITY_PRIVATE if private else table_pb2.VISIBILITY_PUBLIC,
                take_seat=True,
                seat=first,
                display_name="p",
            )
        )
        self.table_id = created.table_id
        self.tokens[created.seat] = created.seat_token
        self.watchers.append(Watcher(self.stub, self.table_id, None, None))
        self.watchers.append(Watcher(self.stub, self.table_id, None, None, batch=True))
        self.watchers.append(
            Watcher(self.stub, self.table_id, first, created.seat_token, batch=True)
        )
        for _ in range(n - 1):
            req = service_pb2.JoinTableRequest(display_name="q")
            if private:
                req.invite_code = created.invite_code
            else:
                req.table_id = self.table_id
            joined = await self.stub.JoinTable(req)
            self.tokens[joined.seat] = joined.seat_token
            self.oracle.check_view(joined.view, joined.seat, "JoinTable")
            if rng.random() < 0.7:
                self.watchers.append(
                    Watcher(
                        self.stub,
                        self.table_id,
                        joined.seat,
                        joined.seat_token,
                        batch=joined.seat % 2 == 1,
                    )
                )
        return n

    async def try_illegal(self, seat: int, view: view_pb2.TableView, n: int) -> None:  # noqa: C901 - every kind of illegal action tried in turn
        """Rejected actions of the seat on turn (and of a seat off turn): every error is
        FAILED_PRECONDITION, changes nothing and names no card hidden from the caller."""
        truth = self.oracle.tables[self.table_id]
        state = truth.at(truth.latest_version).state
        assert state is not None
        hidden = truth.hidden_now(seat)
        hidden_texts = {card_text(c) for c in cards_of(hidden)}
        attempts: list[tuple[int, action_pb2.Action, str]] = []
        if hidden:
            c = self.rng.choice(cards_of(hidden))
            attempts.append((seat, _play(c), "CARD_NOT_HELD"))
        others_public = 0
        for sh in view.seat_hands:
            if sh.seat != seat:
                for pc in sh.public_cards:
                    others_public |= BIT[card_of(pc.suit - 1, pc.rank)]
        if others_public:
            attempts.append(
                (seat, _play(self.rng.choice(cards_of(others_public))), "CARD_NOT_HELD")
            )
        legal_cards = {
            card_of(a.play_card.suit - 1, a.play_card.rank)
            for a in view.legal_actions
            if a.HasField("play_card")
        }
        illegal_own = [c for c in cards_of(state.hands[seat]) if c not in legal_cards]
        if illegal_own:
            attempts.append((seat, _play(self.rng.choice(illegal_own)), ""))
        sung = {a.sing for a in view.legal_actions if a.WhichOneof("kind") == "sing"}
        unsung = [s for s in range(1, 5) if s not in sung]
        attempts.append((seat, action_pb2.Action(sing=self.rng.choice(unsung)), ""))  # type: ignore[arg-type]
        if not any(a.WhichOneof("kind") == "declare_tute" for a in view.legal_actions):
            attempts.append(
                (seat, action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=12)), "")
            )
        if not any(a.WhichOneof("kind") == "exchange_trump" for a in view.legal_actions):
            attempts.append(
                (seat, action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump()), "")
            )
        other = (seat + 1) % n
        if state.hands[other]:
            own_other = self.rng.choice(cards_of(state.hands[other]))
            hidden_texts_other = self.oracle.hidden_texts(self.table_id, other)
            attempts.append((other, _play(own_other), "NOT_YOUR_TURN"))
        else:
            hidden_texts_other = set()
        version = truth.latest_version
        for actor, action, reason in attempts:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await self.stub.SubmitAction(
                    service_pb2.SubmitActionRequest(table_id=self.table_id, action=action),
                    metadata=auth(self.tokens[actor]),
                )
            e = err.value
            self.stats.rejected += 1
            assert e.code() == grpc.StatusCode.FAILED_PRECONDITION, (e.code(), e.details())
            got = reason_of(e)
            assert got, "an illegal move carries an ErrorInfo reason"
            if reason:
                assert got == reason, (got, reason)
            if got == "CARD_NOT_HELD":
                self.stats.not_held.add((e.code().value[0], got, e.details() or ""))
            texts = "\n".join(error_texts(e))
            leaked = card_texts_in(texts) & (hidden_texts if actor == seat else hidden_texts_other)
            assert not leaked, f"an error names hidden cards {leaked}: {texts!r}"
            for token in self.tokens.values():
                assert token not in texts
            assert truth.latest_version == version, "a rejected action changed the table"

    async def play(self) -> None:  # noqa: C901 - a scripted player's loop: one branch per event
        """Random legal moves until the match ends. The moves are chosen from the committed
        state (the test may read it: it is every player at once); views are fetched now and
        then, and each one's legal actions must be the state's."""
        rng = self.rng
        n = await self.setup()
        stub = self.stub
        truth = self.oracle.tables[self.table_id]
        mid_watcher_at = rng.randrange(5, 60)
        step = 0
        while True:
            step += 1
            version = truth.latest_version
            state = truth.at(version).state
            assert state is not None and not state.over
            turn = state.turn
            actors = [turn]
            if n == 4 and not state.trick and state.trick_no >= 2:
                partner = (turn + 2) % 4
                if engine.legal_actions(state, partner):  # CANTE_SINGERS_SIDE
                    actors.append(partner)
            seat = rng.choice(actors)
            legal = engine.legal_actions(state, seat)
            assert legal, "the seat on turn may act"
            if rng.random() < 0.15:
                view = await self.get(seat)
                assert sorted(_action_id(a) for a in view.legal_actions) == sorted(legal)
            if seat == turn and self.illegal_budget and rng.random() < 0.08:
                self.illegal_budget -= 1
                await self.try_illegal(seat, await self.get(seat), n)
            declarations = [a for a in legal if a >= 40]
            if declarations and rng.random() < 0.8:
                action = _action(rng.choice(declarations))
            else:
                action = _action(rng.choice(legal))
            self.stats.saw(action.WhichOneof("kind"))
            resp = await stub.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=self.table_id,
                    action=action,
                    request_id=f"r{step}" if rng.random() < 0.3 else "",
                    expected_version=version,
                ),
                metadata=auth(self.tokens[seat]),
            )
            self.stats.actions += 1
            assert resp.table_version == version + 1 == truth.latest_version
            self.oracle.check_view(resp.view, seat, "SubmitAction.view")
            self.oracle.check_events(self.table_id, list(resp.events), seat, "SubmitAction.events")
            for ev in resp.events:
                self.stats.saw(ev.WhichOneof("kind"))
            if step == mid_watcher_at:
                audience = rng.choice([None, *range(n)])
                token = self.tokens[audience] if audience is not None else None
                self.watchers.append(Watcher(stub, self.table_id, audience, token, batch=True))
            if rng.random() < 0.03:
                for audience in [None, *range(n)]:
                    await self.get(audience, "GetTable(all)")
            if resp.view.status == FINISHED:
                break
        final = [await self.get(a, "GetTable(final)") for a in [None, *range(n)]]
        final_seq = final[0].last_event_sequence
        self.stats.tokens.update(self.tokens.values())
        for w in self.watchers:
            await w.finish(final_seq)
            w.check(self.oracle)
        self.stats.matches += 1


def _action(a: int) -> action_pb2.Action:
    """The wire form of an engine action a player may choose."""
    if a < 40:
        return _play(a)
    if engine.SING <= a < engine.SING + 4:
        return action_pb2.Action(sing=a - engine.SING + 1)  # type: ignore[arg-type]
    if a in (engine.TUTE_12, engine.TUTE_11):
        rank = 12 if a == engine.TUTE_12 else 11
        return action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=rank))
    assert a == engine.EXCHANGE
    return action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump())


def _action_id(msg: action_pb2.Action) -> int:
    kind = msg.WhichOneof("kind")
    if kind == "play_card":
        return card_of(msg.play_card.suit - 1, msg.play_card.rank)
    if kind == "sing":
        return engine.SING + msg.sing - 1
    if kind == "declare_tute":
        return engine.TUTE_12 if msg.declare_tute.rank == 12 else engine.TUTE_11
    assert kind == "exchange_trump", kind
    return engine.EXCHANGE


def _play(card: int) -> action_pb2.Action:
    return action_pb2.Action(
        play_card=card_pb2.Card(suit=SUIT_OF[card] + 1, rank=engine.cards.RANK_OF[card])  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------


async def run_matches(
    server: Server,
    stub: Stub,
    oracle: Oracle,
    monkeypatch: pytest.MonkeyPatch,
    per_preset: int,
    seed: int,
) -> Stats:
    rng = random.Random(seed)
    stats = Stats()
    with LogBuffer() as logbuf, rigged_first_hands(monkeypatch, rng):
        jobs = [p for p in PRESETS for _ in range(per_preset)]
        rng.shuffle(jobs)
        sem = asyncio.Semaphore(4)

        async def one(preset: str, match_seed: int) -> None:
            async with sem:
                await MatchRunner(stub, oracle, random.Random(match_seed), stats, preset).play()

        await asyncio.gather(*(one(p, rng.getrandbits(32)) for p in jobs))
    assert stats.matches == len(jobs)
    # the checks ran on something
    assert oracle.cards_checked > 1000 * len(jobs)
    assert oracle.turns_checked > 20 * len(jobs), "few TurnStarted of a seat's own checked"
    for kind in ("sing", "card_played", "hand_dealt", "card_drawn", "hand_scored"):
        assert stats.kinds.get(kind), f"no {kind} seen in {len(jobs)} matches"
    assert stats.rejected > len(jobs)
    # whatever the hidden card, rejecting it says the same thing (no card-dependent text)
    assert len(stats.not_held) == 1, stats.not_held
    assert '"rpc_error"' in logbuf.text, "the rejected actions were logged"
    check_log(logbuf.text, stats.tokens)
    return stats


def check_log(text: str, tokens: set[str]) -> None:
    """The server's log holds no card and no seat token (it logs ids, seats and reasons)."""
    assert '"table_created"' in text, "the log capture saw nothing"
    found = card_texts_in(text)
    assert not found, f"cards in the server log: {sorted(found)}"
    leaked = [t for t in tokens if t in text]
    assert not leaked, f"{len(leaked)} seat tokens in the server log"


async def test_no_hidden_card_reaches_any_seat_or_spectator(
    server: Server, stub: Stub, oracle: Oracle, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    # A few matches per preset over the wire (fewer over a browser transport, whose messages
    # are the native ones framed otherwise); the combinatorics are the engine's and the
    # wire's (test_properties.py, test_convert.py), the long runs below (slow).
    per_preset = 5 if transport == "grpc" else 2
    stats = await run_matches(server, stub, oracle, monkeypatch, per_preset, seed=20240601)
    assert stats.kinds.get("trump_exchanged") and stats.kinds.get("tute_declared"), stats.kinds


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_no_hidden_card_slow(
    server: Server, stub: Stub, oracle: Oracle, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    await run_matches(server, stub, oracle, monkeypatch, per_preset=100, seed=seed)


async def test_bots_and_timeouts_log_no_card_and_leak_nothing(
    server: Server, stub: Stub, oracle: Oracle
) -> None:
    """Server-side moves (bots, a timed-out turn) go through the same paths: the human and a
    spectator see nothing hidden, and nothing about them is logged with a card."""
    clock = FakeClock()
    server.app.clock = clock  # the turn clock runs out when the test says so
    with LogBuffer() as logbuf:
        tokens: set[str] = set()
        for preset in ("tres", "corriente-6", "parejas"):
            opts = rules_pb2.RuleOptions(turn_time_s=1, target_match_points=1, target_points=1)
            created = await stub.CreateTable(
                service_pb2.CreateTableRequest(
                    rules=rules_pb2.Rules(preset=preset, options=opts),
                    take_seat=True,
                    display_name="ana",
                )
            )
            tid, token = created.table_id, created.seat_token
            tokens.add(token)
            watchers = [Watcher(stub, tid, None, None), Watcher(stub, tid, 0, token)]
            for _ in range(len(created.table.seats) - 1):
                await stub.AddBot(service_pb2.AddBotRequest(table_id=tid), metadata=auth(token))
            timed_out = preset == "tres"  # else let the clock play one turn of the human
            while True:
                v = (
                    await stub.GetTable(
                        service_pb2.GetTableRequest(table_id=tid), metadata=auth(token)
                    )
                ).view
                oracle.check_view(v, 0, "GetTable")
                if v.status == FINISHED:
                    break
                if v.legal_actions and v.turn_seat == 0:
                    if not timed_out:
                        timed_out = True
                        clock.advance(1.001)  # the human's turn time runs out

                        async def moved(
                            version: int = v.version, tok: str = token, t: str = tid
                        ) -> bool:
                            got = await stub.GetTable(
                                service_pb2.GetTableRequest(table_id=t), metadata=auth(tok)
                            )
                            return bool(got.view.version != version)

                        await eventually(moved, what="the timeout")
                        continue
                    resp = await stub.SubmitAction(
                        service_pb2.SubmitActionRequest(table_id=tid, action=v.legal_actions[0]),
                        metadata=auth(token),
                    )
                    oracle.check_view(resp.view, 0, "SubmitAction")
                    oracle.check_events(tid, list(resp.events), 0, "SubmitAction")
                else:  # a bot's turn: wait for its move to be committed
                    await oracle.tables[tid].wait_past(v.version)
            for w in watchers:
                await w.finish(v.last_event_sequence)
                w.check(oracle)
            events = [m.event for m in watchers[0].messages if m.HasField("event")]
            if preset != "tres":
                assert any(e.card_played.timed_out for e in events), "the clock played a card"
    text = logbuf.text
    assert '"turn_timed_out"' in text
    check_log(text, tokens)


# ---------------------------------------------------------------------------------------------
# the checks can fail: leaks planted in the server are caught
# ---------------------------------------------------------------------------------------------


async def test_oracle_catches_a_drawn_card_shown_to_everybody(
    server: Server, stub: Stub, oracle: Oracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "redact", lambda event, seat: event)
    runner = MatchRunner(stub, oracle, random.Random(5), Stats(), "corriente-6")
    with pytest.raises(AssertionError, match=r"card_drawn\.card shows .*a hidden card"):
        await runner.play()
    for w in runner.watchers:
        w.task.cancel()


async def test_oracle_catches_hands_shown_as_public_cards(
    server: Server, stub: Stub, oracle: Oracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = engine.view

    def leaky(state: engine.State, seat: int | None) -> engine.View:
        return real(state, seat)._replace(public_cards=tuple(state.hands))

    monkeypatch.setattr(engine, "view", leaky)
    runner = MatchRunner(stub, oracle, random.Random(6), Stats(), "parejas")
    with pytest.raises(AssertionError, match=r"public_cards\[\d+\] shows .*a hidden card"):
        await runner.play()
    for w in runner.watchers:
        w.task.cancel()


async def test_oracle_catches_legal_actions_shown_to_everybody(
    server: Server, stub: Stub, oracle: Oracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = wire.turn_started_variants

    def leaky(state: engine.State, deadline: float, *, with_legal: bool = True) -> Any:
        out = real(state, deadline, with_legal=with_legal)
        return wire.EventVariants(out.private.get(state.turn, out.public))

    monkeypatch.setattr(wire, "turn_started_variants", leaky)
    runner = MatchRunner(stub, oracle, random.Random(7), Stats(), "tres")
    with pytest.raises(
        AssertionError,
        match=r"legal_actions\[\d+\]\.play_card shows .*a hidden card|legal actions shown to",
    ):
        await runner.play()
    for w in runner.watchers:
        w.task.cancel()


async def test_oracle_catches_legal_actions_of_the_wrong_state(
    server: Server, stub: Stub, oracle: Oracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = wire.turn_started_variants

    def stale(state: engine.State, deadline: float, *, with_legal: bool = True) -> Any:
        """One action too many: a card of the hand that the rules forbid now."""
        out = real(state, deadline, with_legal=with_legal)
        legal = engine.legal_actions(state, state.turn)
        illegal = [c for c in cards_of(state.hands[state.turn]) if c not in legal]
        for ev in out.private.values():
            if illegal:
                ev.turn_started.legal_actions.append(_play(illegal[0]))
        return out

    monkeypatch.setattr(wire, "turn_started_variants", stale)
    runner = MatchRunner(stub, oracle, random.Random(8), Stats(), "parejas")
    with pytest.raises(AssertionError, match=r"legal actions \[.*the rules say"):
        await runner.play()
    for w in runner.watchers:
        w.task.cancel()


def test_log_check_catches_a_card_and_a_token() -> None:
    import structlog

    with LogBuffer() as logbuf:
        structlog.get_logger("tute.test").info("table_created")
        structlog.get_logger("tute.test").info("rpc_error", card="12O")
    with pytest.raises(AssertionError, match="12O"):
        check_log(logbuf.text, set())
    with LogBuffer() as logbuf:
        structlog.get_logger("tute.test").info("table_created")
        structlog.get_logger("tute.test").info("rpc_error", token="s3cr3t-t0ken")
    with pytest.raises(AssertionError, match="seat tokens"):
        check_log(logbuf.text, {"s3cr3t-t0ken"})


# ---------------------------------------------------------------------------------------------
# stale streams: seats left with their streams open, then taken by others
# ---------------------------------------------------------------------------------------------


@dataclass
class StaleStats:
    planted: int = 0
    seat_lost: int = 0
    leaks: list[str] = field(default_factory=list)
    after_lost: int = 0
    """Messages a stale stream received after the event that ended its seat."""
    next_hands: int = 0
    """HandDealt copies with cards that the seats' next (human) occupants received."""


class StaleRunner:
    """One match whose seats were first taken by players who left again with their streams
    open (some resuming from 0), then by humans or bots (a seat may see several leavers).
    The stale streams are judged as a spectator: anything more is a leak."""

    def __init__(
        self, stub: Stub, oracle: Oracle, rng: random.Random, stats: StaleStats, preset: str
    ) -> None:
        self.stub = stub
        self.oracle = oracle
        self.rng = rng
        self.stats = stats
        self.preset = preset

    async def play(self, *, expect_lost: bool = True) -> None:  # noqa: C901 - a scripted player's loop: one branch per event
        rng, stub = self.rng, self.stub
        n = engine.PRESETS[self.preset].players
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(preset=self.preset, options=random_options(self.preset, rng))
            )
        )
        tid = created.table_id
        watchers = [Watcher(stub, tid, None, None)]
        stale: list[Watcher] = []
        for _ in range(rng.randint(1, 2 * n)):  # leavers, on random seats
            seat = rng.randrange(n)
            joined = await stub.JoinTable(
                service_pb2.JoinTableRequest(table_id=tid, seat=seat, display_name="leaver")
            )
            mine = [Watcher(stub, tid, seat, joined.seat_token)]
            if rng.random() < 0.5:
                mine.append(Watcher(stub, tid, seat, joined.seat_token, resume_after=0, batch=True))
            for w in mine:
                await w.wait_seq(joined.view.last_event_sequence)
            await stub.LeaveTable(
                service_pb2.LeaveTableRequest(table_id=tid), metadata=auth(joined.seat_token)
            )
            stale += mine
        self.stats.planted += len(stale)
        tokens: dict[int, str] = {}
        seats = list(range(n))
        rng.shuffle(seats)
        for i, seat in enumerate(seats):
            if rng.random() < 0.6 or (i == n - 1 and not tokens):  # a human plays along
                joined = await stub.JoinTable(
                    service_pb2.JoinTableRequest(table_id=tid, seat=seat, display_name="next")
                )
                tokens[seat] = joined.seat_token
                resume = 0 if rng.random() < 0.5 else None  # replays the leavers' events too
                watchers.append(Watcher(stub, tid, seat, joined.seat_token, resume_after=resume))
            else:
                await stub.AddBot(
                    service_pb2.AddBotRequest(table_id=tid, seat=seat),
                    metadata=auth(created.owner_token),
                )
        truth = self.oracle.tables[tid]
        async with asyncio.timeout(60):
            while True:
                version = truth.latest_version
                state = truth.at(version).state
                assert state is not None
                if state.over:
                    break
                seat = state.turn
                if seat not in tokens:  # a bot's turn: the server plays it
                    await truth.wait_past(version)
                    continue
                action = _action(rng.choice(engine.legal_actions(state, seat)))
                try:
                    await stub.SubmitAction(
                        service_pb2.SubmitActionRequest(
                            table_id=tid, action=action, expected_version=version
                        ),
                        metadata=auth(tokens[seat]),
                    )
                except grpc.aio.AioRpcError as exc:  # a bot's partner sang first
                    assert exc.code() == grpc.StatusCode.ABORTED, exc.details()
        final_seq = (
            await stub.GetTable(service_pb2.GetTableRequest(table_id=tid))
        ).view.last_event_sequence
        for w in watchers:
            await w.finish(final_seq)
            w.check(self.oracle)
            if w.audience is not None:
                self.stats.next_hands += sum(
                    1
                    for e in w.events()
                    if e.WhichOneof("kind") == "hand_dealt" and len(e.hand_dealt.hand)
                )
        for w in stale:
            if expect_lost:
                await asyncio.wait([w.task], timeout=10)
                assert w.task.done(), "a stale stream is still open"
            else:
                await w.finish(final_seq)
            err = w.task.exception() if w.task.done() and not w.task.cancelled() else None
            if isinstance(err, grpc.aio.AioRpcError) and reason_of(err) == "SEAT_LOST":
                assert err.code() == grpc.StatusCode.PERMISSION_DENIED
                self.stats.seat_lost += 1
            events = w.events()
            ends = [
                i
                for i, e in enumerate(events)
                if e.WhichOneof("kind") == "seat_left" and e.seat_left.seat == w.audience
            ]
            if ends:
                self.stats.after_lost += len(events) - 1 - ends[-1]
            w.audience = None  # judged as a spectator
            with self.oracle.counting() as leaks:
                w.check(self.oracle)
            self.stats.leaks += leaks


async def run_stale(
    stub: Stub, oracle: Oracle, per_preset: int, seed: int, expect_lost: bool = True
) -> StaleStats:
    rng = random.Random(seed)
    stats = StaleStats()
    jobs = [p for p in PRESETS for _ in range(per_preset)]
    sem = asyncio.Semaphore(4)

    async def one(preset: str, match_seed: int) -> None:
        async with sem:
            runner = StaleRunner(stub, oracle, random.Random(match_seed), stats, preset)
            await runner.play(expect_lost=expect_lost)

    await asyncio.gather(*(one(p, rng.getrandbits(32)) for p in jobs))
    return stats


async def test_stale_streams_of_players_who_left_see_nothing_of_the_next_occupants(
    server: Server, stub: Stub, oracle: Oracle, transport: str
) -> None:
    per_preset = 3 if transport == "grpc" else 1  # fewer on a browser transport (see above)
    stats = await run_stale(stub, oracle, per_preset, seed=20261201)
    print(
        f"stale streams planted: {stats.planted}, ended with SEAT_LOST: {stats.seat_lost}, "
        f"events after the loss: {stats.after_lost}, leaks: {len(stats.leaks)}"
    )
    assert stats.leaks == [], f"{len(stats.leaks)} leaks: {stats.leaks[:3]}"
    assert stats.planted >= 2 * len(PRESETS)
    assert stats.seat_lost == stats.planted  # every stale stream ended, with SEAT_LOST
    assert stats.after_lost == 0  # ...right after its SeatLeft
    assert stats.next_hands >= per_preset * len(PRESETS)  # the next occupants got their cards


async def test_the_stale_stream_check_catches_a_stream_that_lives_on(
    server: Server, stub: Stub, oracle: Oracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.tables import streams

    monkeypatch.setattr(streams, "ends_occupancy", lambda event, seat: False)
    stats = await run_stale(stub, oracle, per_preset=1, seed=7, expect_lost=False)
    assert stats.seat_lost == 0 and stats.after_lost > 0
    assert any("hand_dealt" in leak for leak in stats.leaks), stats.leaks[:3]
