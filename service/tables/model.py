"""A table's record (metadata, seats, the engine state), its vocabulary and its bytes.

A :class:`TableRecord` is everything the store keeps about a table under one key, with its
``version``: the memory and Redis stores keep it as :func:`encode_record` bytes. Events are
kept beside it (see :mod:`service.store.base`), never inside.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, TypeVar

import engine
from engine.bots import BOTS
from engine.codec import decode_state, encode_state

from .fair import FairLog


class TableStatus(StrEnum):
    """Where a table is in its life: seats being filled, a match on, the match over."""

    WAITING = "waiting"
    PLAYING = "playing"
    FINISHED = "finished"


class Occupant(StrEnum):
    """Who sits in a seat."""

    EMPTY = "empty"
    HUMAN = "human"
    BOT = "bot"


class Visibility(StrEnum):
    """Public tables are listed in the lobby; private ones are joined by invite code."""

    PUBLIC = "public"
    PRIVATE = "private"


WAITING = TableStatus.WAITING
PLAYING = TableStatus.PLAYING
FINISHED = TableStatus.FINISHED
EMPTY = Occupant.EMPTY
HUMAN = Occupant.HUMAN
BOT = Occupant.BOT
PUBLIC = Visibility.PUBLIC
PRIVATE = Visibility.PRIVATE

_STATUS = {m.value: m for m in TableStatus}
_OCCUPANT = {m.value: m for m in Occupant}
_VISIBILITY = {m.value: m for m in Visibility}

PRESET_NAMES: frozenset[str] = frozenset(engine.PRESETS)
"""The rules presets a table may be created with (and the lobby filtered by)."""
BOT_LEVELS: frozenset[str] = frozenset(BOTS)
"""The bot levels a table may seat."""


def action_kind(action: int) -> str:
    """The kind of an engine action, as the metrics label it (:func:`engine.kind_of`)."""
    return str(engine.kind_of(action))


@dataclasses.dataclass
class SeatInfo:
    """One seat: who sits there. ``token_hash`` is the SHA-256 of the seat token (hex); it is
    cleared when the token stops opening the seat (the player left or forfeited).
    ``since_seq`` is the sequence number of the ``SeatJoined`` event that put the occupant
    there: it tells this occupancy from earlier ones of the same seat (0: not known, a record
    written before it was kept)."""

    occupant: Occupant = EMPTY
    name: str = ""
    token_hash: str = ""
    bot_level: str = ""
    since_seq: int = 0
    client_seed: str = ""
    """The client seed the seat's player gave for the match's fair deals ('' for none)."""
    player_id: str = ""
    """The player account the seat is bound to ('' for a seat token's anonymous player or a
    bot): kept after the player leaves or forfeits, for the match record and the ratings."""

    def occupancy(self) -> str:
        """The tag of the occupancy a seat token opens now ('' when none does): what a seated
        WatchTable stream is registered under, so that presence left by an earlier occupant's
        stream never counts for a later one."""
        return str(self.since_seq) if self.occupant == HUMAN and self.token_hash else ""


@dataclasses.dataclass
class GameRecord:
    """A finished game of the points system (for TableView.game_results)."""

    game_no: int
    winner: int
    scores: tuple[int, ...]
    by_tute: bool


@dataclasses.dataclass
class TableRecord:
    """Everything stored about one table (besides its events)."""

    table_id: str
    preset: str
    """The preset the rules came from ('' for custom rules)."""
    rules: engine.Rules
    visibility: Visibility
    invite_code: str
    """Private tables: the code to join by; '' for public tables."""
    created_at: float
    seats: list[SeatInfo]
    status: TableStatus = WAITING
    state: engine.State | None = None
    deadline: float = 0.0
    """Unix time when the current turn times out; 0 = no clock (or no match)."""
    turn_started: float = 0.0
    games: list[GameRecord] = dataclasses.field(default_factory=list)
    last_seq: int = 0
    """Sequence number of the table's latest event (0: none yet)."""
    version: int = 0
    """Grows by one with every committed change (compare-and-set)."""
    forfeited_seat: int = -1
    auto_played: int = 0
    """Cards of the current hand the server played on timeout (a mask over card numbers)."""
    away: dict[int, float] = dataclasses.field(default_factory=dict)
    """With ``disconnect_forfeit_s`` > 0, during a match: human seats seen without an open
    WatchTable stream, and since when (Unix time). A seat still away when the grace period
    has passed forfeits the match (RULES.md §11)."""
    connected: frozenset[int] = frozenset()
    """Seats with an open WatchTable stream on some replica, when the record was loaded
    (from the store's presence; never stored in the record)."""
    owner_token_hash: str = ""
    """SHA-256 (hex) of the owner token CreateTable returned to the table's creator."""
    expires_at: float = 0.0
    """A waiting table where no human sits: when it expires (Unix time; the scheduler then
    deletes it). 0: it does not (a human sits, or the match started)."""
    ranked: bool = False
    """A ranked table (made by the matchmaker): its finished match counts for the ratings
    and is kept in the history as ranked."""
    rated: bool = False
    """A finished ranked table whose rating changes are in the player store
    (:mod:`.ratings`); until then its rating is due."""
    fair: FairLog | None = None
    """Once the match started: its server seeds (secrets until their hands end), client
    seeds and action log, for the commitments, the reveals and the match record."""

    def free_seats(self) -> list[int]:
        return [i for i, s in enumerate(self.seats) if s.occupant == EMPTY]

    def seat_of_token_hash(self, token_hash: str) -> int | None:
        for i, s in enumerate(self.seats):
            if s.token_hash and s.token_hash == token_hash:
                return i
        return None

    def bot_seats(self) -> int:
        return sum(s.occupant == BOT for s in self.seats)


def connected(rec: TableRecord, watchers: Mapping[str, int]) -> frozenset[int]:
    """The seats of ``rec`` whose present watchers (watcher id -> seat) count for their
    current occupants."""
    return frozenset(
        seat
        for watcher, seat in watchers.items()
        if 0 <= seat < len(rec.seats) and counts_for(watcher, rec.seats[seat])
    )


def counts_for(watcher: str, seat: SeatInfo) -> bool:
    """Does a present watcher of this seat count for its current occupant? A watcher id is
    ``<occupancy>.<random>``; one without an occupancy (from a replica of an earlier version)
    counts for whoever sits there."""
    occupancy, dot, _ = watcher.partition(".")
    if not dot:
        return seat.occupant == HUMAN
    return occupancy == seat.occupancy() != ""


_FORMAT = 2
"""Record bytes: the record's fields as one line of compact JSON, then (once the match started)
a newline and the engine state's own bytes (:func:`engine.codec.encode_state`). The rules are
stored once: in the state when there is one (the engine codec validates each distinct set once
per process), in the JSON before the match."""

_RULES_CACHE_MAX = 256
_rules_by_options: dict[tuple[tuple[str, Any], ...], engine.Rules] = {}
"""Rules already decoded, by their options: a table's rules never change, and every load of
its record would otherwise validate the same options again. Bounded: past
``_RULES_CACHE_MAX`` distinct rule sets, decoding simply stops caching."""
_options_by_rules: dict[engine.Rules, dict[str, Any]] = {}


def _rules_options(rules: engine.Rules) -> dict[str, Any]:
    """``rules.options()``, computed once per distinct rules value (Rules is frozen)."""
    found = _options_by_rules.get(rules)
    if found is None:
        found = rules.options()
        if len(_options_by_rules) < _RULES_CACHE_MAX:
            _options_by_rules[rules] = found
    return found


def _rules_from_options(options: dict[str, Any]) -> engine.Rules:
    """``engine.Rules.from_options(options)``, validated once per distinct set of options."""
    key = tuple(options.items())
    found = _rules_by_options.get(key)
    if found is None:
        found = engine.Rules.from_options(options)
        if len(_rules_by_options) < _RULES_CACHE_MAX:
            _rules_by_options[key] = found
    return found


def encode_record(rec: TableRecord) -> bytes:
    """A record as bytes (see :data:`_FORMAT`)."""
    d: dict[str, Any] = {
        "f": _FORMAT,
        "id": rec.table_id,
        "preset": rec.preset,
        "rules": _rules_options(rec.rules) if rec.state is None else None,
        "vis": rec.visibility,
        "invite": rec.invite_code,
        "created": rec.created_at,
        "seats": [[s.occupant, s.name, s.token_hash, s.bot_level] for s in rec.seats],
        "since": [s.since_seq for s in rec.seats],
        "status": rec.status,
        "deadline": rec.deadline,
        "turn_started": rec.turn_started,
        "games": [[g.game_no, g.winner, list(g.scores), g.by_tute] for g in rec.games],
        "seq": rec.last_seq,
        "version": rec.version,
        "forfeited": rec.forfeited_seat,
        "auto": rec.auto_played,
        "away": {str(seat): since for seat, since in rec.away.items()},
        "owner": rec.owner_token_hash,
        "expires": rec.expires_at,
        "cseeds": [s.client_seed for s in rec.seats],
        "pids": [s.player_id for s in rec.seats],
        "ranked": rec.ranked,
        "rated": rec.rated,
    }
    text = json.dumps(d, separators=(",", ":"))
    # the fair log last, as its own text (which encodes each action once: FairLog.json_text)
    fair = "null" if rec.fair is None else rec.fair.json_text()
    head = f'{text[:-1]},"fair":{fair}}}'.encode()
    return head if rec.state is None else head + b"\n" + encode_state(rec.state)


def copy_record(rec: TableRecord) -> TableRecord:
    """A copy of a record that a change may edit without touching ``rec``: what
    :func:`decode_record` of its bytes gives (``connected`` empty), without decoding. The
    engine state and the rules are immutable values and shared."""
    copied = _attributes(rec)
    copied.seats = [_attributes(s) for s in rec.seats]
    copied.games = list(rec.games)
    copied.away = dict(rec.away)
    copied.connected = frozenset()
    copied.fair = None if rec.fair is None else rec.fair.copy()
    return copied


_D = TypeVar("_D")


def _attributes(obj: _D) -> _D:
    """A new instance of ``obj``'s dataclass with the same attribute values: what
    ``dataclasses.replace(obj)`` gives, at a quarter of its time (no ``__init__`` call with
    every field by keyword; a copy is made twice per action). Its attributes live in a dict
    of its own rather than inline: about 300 bytes more per record copy (tracemalloc), which
    the up to 4,096 records kept decoded can spare."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    return new


_FAIR_KEY = b',"fair":'


def _fair_text(head: bytes) -> str:
    """The fair log's JSON text in a record's head: its last value (:func:`encode_record`;
    no string in the log holds an unescaped quote, so the key is found only where it is)."""
    at = head.rfind(_FAIR_KEY)
    return head[at + len(_FAIR_KEY) : -1].decode() if at >= 0 and head.endswith(b"}") else ""


def decode_record(data: bytes) -> TableRecord:
    """The record :func:`encode_record` made these bytes from (``ValueError``: not a record of
    this format)."""
    head, _, tail = data.partition(b"\n")
    d = json.loads(head)
    if d.get("f") != _FORMAT:
        raise ValueError("unknown table record format")
    state = decode_state(tail) if tail else None
    return TableRecord(
        table_id=d["id"],
        preset=d["preset"],
        rules=state.rules if state is not None else _rules_from_options(d["rules"]),
        visibility=_VISIBILITY[d["vis"]],
        invite_code=d["invite"],
        created_at=d["created"],
        seats=[
            SeatInfo(_OCCUPANT[s[0]], s[1], s[2], s[3], since, cseed, pid)
            for s, since, cseed, pid in zip(
                d["seats"],
                d.get("since") or [0] * len(d["seats"]),
                d.get("cseeds") or [""] * len(d["seats"]),
                d.get("pids") or [""] * len(d["seats"]),
                strict=True,
            )
        ],
        status=_STATUS[d["status"]],
        state=state,
        deadline=d["deadline"],
        turn_started=d["turn_started"],
        games=[GameRecord(g[0], g[1], tuple(g[2]), g[3]) for g in d["games"]],
        last_seq=d["seq"],
        version=d["version"],
        forfeited_seat=d["forfeited"],
        auto_played=d.get("auto", 0),
        away={int(seat): since for seat, since in d.get("away", {}).items()},
        owner_token_hash=d.get("owner", ""),
        expires_at=d.get("expires", 0.0),
        fair=None if (fair := d.get("fair")) is None else FairLog.from_json(fair, _fair_text(head)),
        ranked=d.get("ranked", False),
        rated=d.get("rated", False),
    )
