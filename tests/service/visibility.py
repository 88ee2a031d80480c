"""An independent oracle for hidden information (RULES.md §3), for the service tests.

The oracle does not ask the server (nor ``engine.view`` / ``engine.redact``) what a seat may
see. It records every table state the server commits (by hooking the store's ``create`` and
``commit``) and derives, from the plain facts of each state (hands, tricks played, the trump
card, the turned card, cantes sung, a declared tute) and of each change between two states
(an exchange, the last card of a hand), the set of cards each seat may know at each version:

    visible(seat) = its own hand | cards played this hand | the trump card
                    | held cards the table has seen this hand (§3: the 3p/4p trump card, the
                      2p turned card, cante pairs, tute cards, both cards of an exchange)

A spectator is the same without a hand. Every ``Card`` message a test receives is then looked
up against the version it was built from (``TableView.version``, ``Event.table_version``):
events of a change that come before its ``HandDealt`` (the end of the old hand: the last card,
``TrickTaken``, ``HandScored``) against the old hand, the rest against the new hand, and every
``HandResult`` against the final knowledge of its own hand.

A seat's legal actions show its cards: a ``TurnStarted`` lists them only in the copy of the
seat on turn (where they must be exactly the rules' legal actions in that version's state);
every other audience's copy lists none.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import logging
import re
from collections.abc import Iterator
from typing import Any

import structlog
from google.protobuf.message import Message

import engine
from engine.cards import BIT, RANKS, card_of, card_text, cards_of
from engine.game import pack_for
from service.store.base import record_bytes
from service.tables.model import decode_record
from tute.v1 import action_pb2, card_pb2, event_pb2, view_pb2

Audience = int | None
"""A seat, or None for a spectator."""

CARD_FULL_NAME = card_pb2.Card.DESCRIPTOR.full_name
CARD_TEXT_RE = re.compile(r"(?<![A-Za-z0-9])(?:1[0-2]|[1-7])[OCEB](?![A-Za-z0-9])")
"""Any card in text notation (``12O``, ``3E``) as a word of its own."""


def card_id(msg: card_pb2.Card) -> int:
    """The engine card of a wire card; AssertionError for a malformed one."""
    assert 1 <= msg.suit <= 4, f"a Card with suit {msg.suit} was sent"
    assert msg.rank in RANKS, f"a Card with rank {msg.rank} was sent"
    return card_of(msg.suit - 1, msg.rank)


def iter_cards(msg: Message, path: str = "") -> Iterator[tuple[str, card_pb2.Card]]:
    """Every ``Card`` message inside ``msg`` (recursively), with its field path."""
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        name = f"{path}.{fd.name}" if path else fd.name
        if fd.message_type.GetOptions().map_entry:
            items = [v for v in value.values() if isinstance(v, Message)]
        elif fd.is_repeated:
            items = list(value)
        else:
            items = [value]
        for i, item in enumerate(items):
            sub = f"{name}[{i}]" if fd.is_repeated else name
            if fd.message_type.full_name == CARD_FULL_NAME:
                yield sub, item  # type: ignore[misc]  # a Card field holds a Card
            else:
                yield from iter_cards(item, sub)


def played_mask(state: engine.State) -> int:
    m = 0
    for _, cards, _ in state.history:
        for c in cards:
            m |= BIT[c]
    for c in state.trick:
        m |= BIT[c]
    return m


def _rank_mask(rank: int) -> int:
    return sum(BIT[card_of(s, rank)] for s in range(4))


def _pair_mask(suit: int) -> int:
    return BIT[card_of(suit, 12)] | BIT[card_of(suit, 11)]


@dataclasses.dataclass
class VersionTruth:
    """What each audience may know at one version: in the state right after the change
    (``new``) and of the hand that was going on when the change began (``old``; the same sets
    unless the change ended a hand)."""

    state: engine.State | None
    new: dict[Audience, int]
    old: dict[Audience, int]
    hand_changed: bool


class TableTruth:
    """The committed states of one table by version, and the visible sets derived from them."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.states: dict[int, engine.State | None] = {}
        self._computed: dict[int, VersionTruth] = {}
        self._final: dict[int, dict[Audience, int]] = {}
        self._revealed = 0
        self._done_until = 0
        self._committed = asyncio.Event()

    def record(self, version: int, state: engine.State | None) -> None:
        assert version not in self.states, f"version {version} committed twice"
        self.states[version] = state
        self._committed.set()

    async def wait_past(self, version: int, timeout: float = 10.0) -> None:
        """Until a version above ``version`` is committed (a move the server plays)."""
        async with asyncio.timeout(timeout):
            while self.latest_version <= version:
                self._committed.clear()
                await self._committed.wait()

    @property
    def players(self) -> int:
        for st in self.states.values():
            if st is not None:
                return st.rules.players
        raise AssertionError("the match has not started")

    def _audiences(self, n: int) -> list[Audience]:
        return [*range(n), None]

    def _visible(self, st: engine.State, revealed: int) -> dict[Audience, int]:
        common = revealed | played_mask(st) | BIT[st.trump_card]
        out: dict[Audience, int] = {None: common}
        for s in range(st.rules.players):
            out[s] = common | st.hands[s]
        return out

    def _compute(self) -> None:
        top = max(self.states)
        for v in range(self._done_until + 1, top + 1):
            assert v in self.states, f"table {self.table_id}: version {v} was never recorded"
            cur = self.states[v]
            prev = self.states.get(v - 1)
            if cur is None:
                self._computed[v] = VersionTruth(None, {}, {}, False)
                self._done_until = v
                continue
            new_hand = prev is None or cur.hand_no != prev.hand_no
            if new_hand:
                old: dict[Audience, int] = {}
                if prev is not None:
                    old = self._visible(prev, self._revealed)
                    extra = 0
                    res = cur.last_result
                    assert res is not None and res.hand_no == prev.hand_no
                    if res.tute_seat >= 0:
                        extra = _rank_mask(res.tute_rank)
                    else:
                        left = 0
                        for h in prev.hands:
                            left |= h
                        assert left.bit_count() == 1, "a played-out hand ends on its last card"
                        extra = left
                    old = {a: m | extra for a, m in old.items()}
                    self._final[prev.hand_no] = old
                self._revealed = BIT[cur.trump_card]
                if cur.stock:
                    self._revealed |= BIT[cur.stock[-1]]
                new = self._visible(cur, self._revealed)
            else:
                assert prev is not None
                for _seat, suit, _pts, _trick in cur.cantes:
                    self._revealed |= _pair_mask(suit)
                if (
                    cur.stock
                    and prev.stock
                    and len(cur.stock) == len(prev.stock)
                    and cur.stock[-1] != prev.stock[-1]
                ):  # an exchange: the taken card is held in public, the given one lies turned
                    self._revealed |= BIT[cur.stock[-1]] | BIT[prev.stock[-1]]
                res = cur.last_result
                if res is not None and res.hand_no == cur.hand_no and res.tute_seat >= 0:
                    self._revealed |= _rank_mask(res.tute_rank)
                new = self._visible(cur, self._revealed)
                old = new
            self._final[cur.hand_no] = new
            self._computed[v] = VersionTruth(cur, new, old, new_hand and prev is not None)
            self._done_until = v

    def at(self, version: int) -> VersionTruth:
        if version > self._done_until:
            self._compute()
        assert version in self._computed, f"table {self.table_id}: no state at version {version}"
        return self._computed[version]

    def final_of_hand(self, hand_no: int) -> dict[Audience, int]:
        self._compute()
        return self._final[hand_no]

    def hidden_now(self, audience: Audience) -> int:
        """Cards hidden from ``audience`` in the latest state (for error-text checks)."""
        truth = self.at(max(self.states))
        if truth.state is None:
            return 0
        return mask_of_pack(truth.state) & ~truth.new[audience]

    @property
    def latest_version(self) -> int:
        return max(self.states)


def mask_of_pack(state: engine.State) -> int:
    m = 0
    for c in pack_for(state.rules):
        m |= BIT[c]
    return m


class Oracle:
    """Every table's truth, fed by a hooked store; checks messages against it."""

    def __init__(self) -> None:
        self.tables: dict[str, TableTruth] = {}
        self.cards_checked = 0
        self.messages_checked = 0
        self.turns_checked = 0
        """TurnStarted events whose legal actions were checked in the copy of the seat on turn."""
        self.leaks: list[str] | None = None
        """None: a hidden card fails the check at once. A list (see :meth:`counting`): each
        hidden card is recorded there instead, to be counted."""

    def install(self, monkeypatch: Any, store: Any) -> None:
        """Hook ``store.create`` and ``store.commit`` to record every committed record."""
        orig_create = store.create
        orig_commit = store.commit

        async def create(
            table_id: str, record: bytes, invite_code: str, lobby: Any, **kw: Any
        ) -> None:
            await orig_create(table_id, record, invite_code, lobby, **kw)
            rec = decode_record(record)
            self.tables.setdefault(table_id, TableTruth(table_id)).record(1, rec.state)

        async def commit(table_id: str, change: Any) -> Any:
            out = await orig_commit(table_id, change)
            if out.applied:
                rec = decode_record(record_bytes(change.record))  # a deferred one: encoded now
                assert rec.version == change.expected_version + 1
                self.tables[table_id].record(rec.version, rec.state)
            return out

        monkeypatch.setattr(store, "create", create)
        monkeypatch.setattr(store, "commit", commit)

    # ---------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def counting(self) -> Iterator[list[str]]:
        """Within the block, hidden cards are recorded in the list yielded, not asserted."""
        old, self.leaks = self.leaks, []
        try:
            yield self.leaks
        finally:
            self.leaks = old

    def _check_cards(
        self, msg: Message, allowed: int, where: str, skip: tuple[str, ...] = ()
    ) -> None:
        for path, card in iter_cards(msg):
            if skip and path.startswith(skip):
                continue
            c = card_id(card)
            self.cards_checked += 1
            if allowed & BIT[c]:
                continue
            self._fail(f"{where}: {path} shows {card_text(c)}, a hidden card")

    def _fail(self, leak: str) -> None:
        if self.leaks is None:
            raise AssertionError(leak)
        self.leaks.append(leak)

    def _check_result(
        self, truth: TableTruth, result: Message, audience: Audience, where: str
    ) -> None:
        hand_no = result.hand_number  # type: ignore[attr-defined]
        allowed = truth.final_of_hand(hand_no)[audience]
        self._check_cards(result, allowed, f"{where} (result of hand {hand_no})")

    def check_view(self, view: view_pb2.TableView, audience: Audience, where: str) -> None:
        self.messages_checked += 1
        truth = self.tables[view.table_id]
        vt = truth.at(view.version)
        where = f"{where} [table {view.table_id} v{view.version} seat {audience}]"
        if vt.state is None:
            self._check_cards(view, 0, where)
            return
        self._check_cards(view, vt.new[audience], where, skip=("last_hand_result",))
        if view.HasField("last_hand_result"):
            self._check_result(truth, view.last_hand_result, audience, where)
        # the hand shown is exactly the audience's own hand
        own = vt.state.hands[audience] if audience is not None else 0
        shown = 0
        for c in view.hand:
            shown |= BIT[card_id(c)]
        if shown != own:
            self._fail(f"{where}: hand shows {_text(shown)}, holds {_text(own)}")

    def check_events(
        self, table_id: str, events: list[event_pb2.Event], audience: Audience, where: str
    ) -> None:
        """Events in stream order (complete changes: every event of a version)."""
        truth = self.tables[table_id]
        version = -1
        dealt = False
        for ev in events:
            self.messages_checked += 1
            if ev.table_version != version:
                version, dealt = ev.table_version, False
            kind = ev.WhichOneof("kind")
            if kind == "hand_dealt":
                dealt = True
            vt = truth.at(version)
            w = f"{where} [table {table_id} seq {ev.sequence} v{version} {kind} seat {audience}]"
            if vt.state is None:
                self._check_cards(ev, 0, w)
                continue
            allowed = (vt.new if dealt or not vt.hand_changed else vt.old)[audience]
            self._check_cards(ev, allowed, w, skip=("hand_scored.result",))
            if kind == "turn_started":
                self._check_turn(ev.turn_started, vt.state, audience, w)
            if kind == "hand_scored":
                self._check_result(truth, ev.hand_scored.result, audience, w)
            if kind == "hand_dealt":
                own = vt.state.hands[audience] if audience is not None else 0
                shown = 0
                for c in ev.hand_dealt.hand:
                    shown |= BIT[card_id(c)]
                if shown != own:
                    self._fail(f"{w}: dealt {_text(shown)}, holds {_text(own)}")

    def _check_turn(
        self, turn: event_pb2.TurnStarted, state: engine.State, audience: Audience, where: str
    ) -> None:
        got = sorted(action_id(a) for a in turn.legal_actions)
        if audience is None or audience != turn.seat:
            if got:  # another seat's legal actions tell its cards
                self._fail(f"{where}: seat {turn.seat}'s legal actions shown to {audience}")
            return
        assert turn.seat == state.turn, f"{where}: TurnStarted for seat {turn.seat} off turn"
        want = sorted(engine.legal_actions(state, turn.seat))
        assert got == want, f"{where}: legal actions {got}, the rules say {want}"
        self.turns_checked += 1

    def hidden_texts(self, table_id: str, audience: Audience) -> set[str]:
        return {card_text(c) for c in cards_of(self.tables[table_id].hidden_now(audience))}


def action_id(msg: action_pb2.Action) -> int:
    """The engine action of a wire action (a player's: card, cante, tute or exchange)."""
    kind = msg.WhichOneof("kind")
    if kind == "play_card":
        return card_id(msg.play_card)
    if kind == "sing":
        assert 1 <= msg.sing <= 4, msg
        return engine.SING + msg.sing - 1
    if kind == "declare_tute":
        assert msg.declare_tute.rank in (11, 12), msg
        return engine.TUTE_12 if msg.declare_tute.rank == 12 else engine.TUTE_11
    assert kind == "exchange_trump", msg
    return engine.EXCHANGE


def _text(mask: int) -> str:
    return " ".join(card_text(c) for c in cards_of(mask)) or "-"


def card_texts_in(text: str) -> set[str]:
    """Every card in text notation that occurs in ``text``."""
    return set(CARD_TEXT_RE.findall(text))


# ---------------------------------------------------------------------------------------------
# The server's log, captured whole
# ---------------------------------------------------------------------------------------------


class LogBuffer:
    """structlog configured (for the test's duration) to render every line, debug included,
    as JSON into a buffer, with the request context merged in as in production."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self._old: dict[str, Any] | None = None

    def __enter__(self) -> LogBuffer:
        self._old = structlog.get_config()
        structlog.configure(
            processors=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
            wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
            logger_factory=structlog.PrintLoggerFactory(file=self.buffer),
            cache_logger_on_first_use=False,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._old is not None
        structlog.configure(**self._old)

    @property
    def text(self) -> str:
        return self.buffer.getvalue()
