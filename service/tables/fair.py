"""Fair deals at a table: each hand's server seed, committed before the deal, and the log a
finished match's record is built from.

At the match's start the server draws hand 1's seed (``secrets``) and shuffles its pack with
the seats' client seeds (:mod:`engine.shuffle`); it always draws the next hand's seed and hands
its pack to the engine (:func:`engine.with_deck`) before the action that could end the current
hand, so the engine deals every hand from the committed shuffle. The seeds live only in the
table's record in the store: an event shows a hand's commitment when it is dealt and its seed
once it has ended (:mod:`service.wire.records`), never before.

:class:`FairLog` keeps, compactly, what the record needs besides the engine state: the seeds,
the client seeds, every action with its time and who made it, and each hand's outcome.
:func:`match_record` builds the :class:`engine.record.MatchRecord` of a finished match.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Callable, Iterable
from typing import Any

import engine
from engine.events import Event, HandEnded
from engine.record import (
    ActionRecord,
    HandOutcome,
    MatchRecord,
    Results,
    SeatRecord,
    add_hand,
    start_record,
)
from engine.shuffle import FairnessError, commitment, encode_client_seed, shuffle

from ..errors import InvalidArgument

BY_CODES: tuple[str, ...] = ("player", "bot", "server")
"""Who made an action, by code in :attr:`FairLog.actions`."""
PLAYER, BOT, SERVER = 0, 1, 2

Draw = Callable[[], bytes]


def check_client_seed(text: str) -> str:
    """A client seed as a request gave it, checked: INVALID_ARGUMENT naming ``client_seed``."""
    try:
        encode_client_seed(text)
    except FairnessError as exc:
        raise InvalidArgument(exc.message, field="client_seed") from None
    return text


def draw_seed() -> bytes:
    """A fresh 256-bit server seed."""
    return secrets.token_bytes(32)


_COMPACT = (",", ":")
"""``json.dumps`` separators of compact JSON, as the table record's."""


@dataclasses.dataclass
class FairLog:
    """A match's deals and actions, as the table's record stores them."""

    started_at: float
    """When the match started (Unix time)."""
    first_dealer: int
    client_seeds: list[str]
    """Per seat: the client seed its player gave ('' for none and for bots)."""
    seeds: list[str]
    """Hex server seeds: ``seeds[h - 1]`` for hand ``h``; while a hand is played the list
    also holds the next hand's (drawn ahead, secret like the current one)."""
    actions: list[list[int]] = dataclasses.field(default_factory=list)
    """[seat, action, milliseconds since the start, who (:data:`BY_CODES`)] per action."""
    outcomes: list[list[Any]] = dataclasses.field(default_factory=list)
    """[hand_no, totals, winner side, capote, tute seat] per ended hand."""
    _actions_text: tuple[int, object, str] = dataclasses.field(
        default=(0, None, ""), compare=False, repr=False
    )
    """What :meth:`json_text` encoded of ``actions`` so far: how many, the last of them (the
    same object, or the text is stale) and their JSON without the brackets. The list only
    grows (:func:`note`), so each encode adds the new actions' text instead of encoding the
    match's every action again."""

    def commitment_of(self, hand_no: int) -> str:
        return commitment(bytes.fromhex(self.seeds[hand_no - 1])).hex()

    def to_json(self) -> list[Any]:
        return [
            self.started_at,
            self.first_dealer,
            self.client_seeds,
            self.seeds,
            self.actions,
            self.outcomes,
        ]

    def json_text(self) -> str:
        """``to_json()`` as compact JSON text (what ``json.dumps`` gives), the actions' part
        encoded once each."""
        actions = self.actions
        n, last, text = self._actions_text
        if n > len(actions) or (n and actions[n - 1] is not last):
            n, text = 0, ""  # not a longer form of the list encoded: all of it again
        if n < len(actions):
            more = json.dumps(actions[n:], separators=_COMPACT)[1:-1]
            text = f"{text},{more}" if text else more
            self._actions_text = (len(actions), actions[-1], text)
        data = self.to_json()  # the actions at index 4, between what is encoded afresh
        head = json.dumps(data[:4], separators=_COMPACT)
        tail = json.dumps(data[5:], separators=_COMPACT)
        return f"{head[:-1]},[{text}],{tail[1:]}"

    def copy(self) -> FairLog:
        """A copy whose lists a change may extend without touching this one's (the entries,
        never edited, are shared), with what :meth:`json_text` encoded so far."""
        return FairLog(
            self.started_at,
            self.first_dealer,
            list(self.client_seeds),
            list(self.seeds),
            list(self.actions),
            list(self.outcomes),
            self._actions_text,
        )

    @classmethod
    def from_json(cls, data: list[Any], text: str = "") -> FairLog:
        """The log of ``data``; with ``text``, the JSON text ``data`` was parsed from, whose
        actions' part :meth:`json_text` then reuses rather than encoding them again (a record
        another replica committed: its next commit here would encode every action of the
        match). Text that is not :meth:`json_text`'s own form of ``data`` is not used."""
        log = cls(data[0], data[1], data[2], data[3], data[4], data[5])
        if text:
            head = json.dumps(data[:4], separators=_COMPACT)[:-1] + ",["
            tail = "]," + json.dumps(data[5:], separators=_COMPACT)[1:]
            if len(text) >= len(head) + len(tail) and text.startswith(head) and text.endswith(tail):
                # what is between is the actions' array, without its brackets, as parsed
                actions = log.actions
                inner = text[len(head) : len(text) - len(tail)]
                log._actions_text = (len(actions), actions[-1] if actions else None, inner)
        return log


def start(
    rules: engine.Rules, client_seeds: list[str], now: float, draw: Draw | None = None
) -> tuple[engine.State, FairLog]:
    """A new match dealt from the committed shuffle, and its log. ``draw``: where seeds come
    from (default :func:`draw_seed`, looked up at each call)."""
    draw = draw or draw_seed
    seed = draw()
    pack = shuffle(seed, client_seeds, 1, rules)
    state = engine.new_match(rules, secrets.randbits(64), decks=[pack])
    log = FairLog(now, state.dealer, list(client_seeds), [seed.hex()])
    return next_pack(state, log, draw), log


def next_pack(state: engine.State, log: FairLog, draw: Draw | None = None) -> engine.State:
    """The state with the next hand's pack given to the engine, drawn now if not yet."""
    if state.over or len(state.decks) > state.hand_no:
        return state
    draw = draw or draw_seed
    hand_no = len(state.decks) + 1
    if len(log.seeds) < hand_no:
        log.seeds.append(draw().hex())
    pack = shuffle(bytes.fromhex(log.seeds[hand_no - 1]), log.client_seeds, hand_no, state.rules)
    return engine.with_deck(state, pack)


def note(
    log: FairLog, seat: int, action: int, by: int, now: float, events: Iterable[Event]
) -> None:
    """An applied action and the outcomes of the hands it ended."""
    log.actions.append([seat, action, max(0, round((now - log.started_at) * 1000)), by])
    for e in events:
        if isinstance(e, HandEnded):
            r = e.result
            log.outcomes.append([r.hand_no, list(r.totals), r.winner, r.capote, r.tute_seat])


def match_record(
    log: FairLog,
    *,
    table_id: str,
    rules: engine.Rules,
    seats: list[SeatRecord],
    state: engine.State,
    engine_version: str,
) -> MatchRecord:
    """The record of a finished match (the hands dealt, not the one drawn ahead)."""
    record = start_record(
        table_id,
        rules,
        log.first_dealer,
        seats,
        engine_version,
        started_at_ms=round(log.started_at * 1000),
    )
    for h in range(1, state.hand_no + 1):
        record = add_hand(record, h, bytes.fromhex(log.seeds[h - 1]), log.client_seeds)
    return record._replace(
        actions=tuple(
            ActionRecord(seat, engine.action_text(action), offset, BY_CODES[by])
            for seat, action, offset, by in log.actions
        ),
        results=Results(
            hands=tuple(HandOutcome(h, tuple(t), w, c, s) for h, t, w, c, s in log.outcomes),
            winners=tuple(state.winners),
            reason=state.end_reason,
        ),
    )
