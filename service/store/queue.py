"""The matchmaking queue as a store keeps it: tickets, each atomic step of their life, and the
memory store's queue (the Redis store's is :mod:`.redis.queue`, the same steps in Lua).

A ticket is a player waiting in one mode's queue, then, once matched, where it is to sit. The
store knows its id, mode, player, the rating its window is centred on, when it was queued and
until when it is alive, and two opaque payloads: ``entry`` (what the matchmaker needs to seat
the player) and, once matched, ``plan`` (the table the matchmaker built for it). Every step
is atomic on every replica:

- :meth:`TicketQueue.enqueue`: one live ticket per player, waiting or matched (queueing again
  returns it), and so at most one waiting ticket per player; a matched ticket is replaced
  only when the caller names it (its match is over);
- :meth:`TicketQueue.claim`: a group of tickets matched together, all or none, and only
  tickets still waiting and alive: a cancelled or expired ticket is never matched, and no
  ticket (so no player) is matched twice; each stays its player's ticket while it is kept;
- :meth:`TicketQueue.cancel` and :meth:`TicketQueue.touch`: the watcher's stream closing, and
  keeping the ticket alive while it is open (both for waiting tickets only).

A waiting ticket past its ``alive_until`` is dead: no step revives or matches it, the store
forgets it and its player may queue again. A matched ticket's ``alive_until`` is until when
it is kept (the claim's ``now + keep_s``); past it the ticket is gone and holds its player no
more. Times are the caller's clock (replicas share the Unix time; tests drive it).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence

WAITING = "waiting"
MATCHED = "matched"


@dataclasses.dataclass(frozen=True, slots=True)
class Ticket:
    """One ticket as stored (see the module's docstring)."""

    ticket_id: str
    mode: str
    player_id: str
    rating: float
    enqueued_at: float
    alive_until: float
    entry: bytes = b""
    state: str = WAITING
    plan: bytes = b""

    def alive(self, now: float) -> bool:
        """A waiting ticket lives, and a matched one is kept, until ``alive_until``."""
        return self.alive_until >= now


class TicketQueue(abc.ABC):
    """The tickets of every mode, shared by every replica of one store."""

    @abc.abstractmethod
    async def enqueue(self, ticket: Ticket, now: float, *, replace_matched: str = "") -> Ticket:
        """Queue ``ticket`` (state waiting), unless its player has a live ticket already:
        then that one, unchanged (waiting in whatever mode, or matched and still kept). The
        player's matched ticket whose id is ``replace_matched`` (the caller found its match
        over) is the exception: ``ticket`` is queued and becomes the player's ticket, and the
        matched one stays readable by its id until it is no longer kept. As one step: of
        concurrent calls for one player, at most one queues its ticket and the others
        return that one."""

    @abc.abstractmethod
    async def get(self, ticket_id: str, now: float) -> Ticket | None:
        """A live ticket (waiting and alive, or matched and still kept), else None."""

    @abc.abstractmethod
    async def waiting(self, mode: str, now: float) -> list[Ticket]:
        """The live waiting tickets of ``mode``, oldest first (dead ones are dropped)."""

    @abc.abstractmethod
    async def count(self, mode: str) -> int:
        """About how many tickets wait in ``mode`` (dead ones may count until the next
        :meth:`waiting` drops them): cheap, for the progress shown to watchers."""

    @abc.abstractmethod
    async def touch(self, ticket_id: str, alive_until: float, now: float) -> bool:
        """Keep a live waiting ticket alive until ``alive_until``; False when it is not one
        (matched, cancelled, dead)."""

    @abc.abstractmethod
    async def cancel(self, ticket_id: str) -> bool:
        """Remove a waiting ticket (its player may queue again); False when it is none."""

    @abc.abstractmethod
    async def claim(
        self, ticket_ids: Sequence[str], plan: bytes, now: float, keep_s: float
    ) -> bool:
        """Atomically: if every ticket of ``ticket_ids`` is waiting and alive at ``now``, mark
        them all matched with ``plan``, take them out of their queue and keep them ``keep_s``
        (``alive_until`` becomes ``now + keep_s``), each still its player's ticket meanwhile
        (:meth:`enqueue` returns it); else change nothing. True when claimed."""


class MemoryQueue(TicketQueue):
    """The queue of the memory store (one process; each step runs without awaiting, so it is
    atomic for every replica in that process)."""

    def __init__(self) -> None:
        self._tickets: dict[str, Ticket] = {}
        self._kept_until: dict[str, float] = {}
        """Matched tickets: until when they are kept (their ``alive_until``)."""
        self._by_player: dict[str, str] = {}
        """Each player's live ticket, waiting or matched."""
        self._queues: dict[str, dict[str, None]] = {}
        """Per mode, the waiting ticket ids in the order they were queued."""
        self._claims = 0

    def _live(self, ticket_id: str, now: float) -> Ticket | None:
        t = self._tickets.get(ticket_id)
        if t is None:
            return None
        if t.alive(now):
            return t
        self._drop(t)
        return None

    def _drop(self, t: Ticket) -> None:
        self._tickets.pop(t.ticket_id, None)
        self._kept_until.pop(t.ticket_id, None)
        self._queues.get(t.mode, {}).pop(t.ticket_id, None)
        if self._by_player.get(t.player_id) == t.ticket_id:
            del self._by_player[t.player_id]

    async def enqueue(self, ticket: Ticket, now: float, *, replace_matched: str = "") -> Ticket:
        held = self._by_player.get(ticket.player_id)
        if held is not None:
            current = self._live(held, now)
            if current is not None and not (
                current.state == MATCHED and current.ticket_id == replace_matched
            ):
                return current
        ticket = dataclasses.replace(ticket, state=WAITING, plan=b"")
        self._tickets[ticket.ticket_id] = ticket
        self._by_player[ticket.player_id] = ticket.ticket_id
        self._queues.setdefault(ticket.mode, {})[ticket.ticket_id] = None
        return ticket

    async def get(self, ticket_id: str, now: float) -> Ticket | None:
        return self._live(ticket_id, now)

    async def waiting(self, mode: str, now: float) -> list[Ticket]:
        out = []
        for ticket_id in list(self._queues.get(mode, {})):
            t = self._live(ticket_id, now)
            if t is not None:
                out.append(t)
        return out

    async def count(self, mode: str) -> int:
        return len(self._queues.get(mode, {}))

    async def touch(self, ticket_id: str, alive_until: float, now: float) -> bool:
        t = self._live(ticket_id, now)
        if t is None or t.state != WAITING:
            return False
        self._tickets[ticket_id] = dataclasses.replace(t, alive_until=alive_until)
        return True

    async def cancel(self, ticket_id: str) -> bool:
        t = self._tickets.get(ticket_id)
        if t is None or t.state != WAITING:
            return False
        self._drop(t)
        return True

    async def claim(
        self, ticket_ids: Sequence[str], plan: bytes, now: float, keep_s: float
    ) -> bool:
        found = [self._live(i, now) for i in ticket_ids]
        if len(set(ticket_ids)) != len(ticket_ids) or any(
            t is None or t.state != WAITING for t in found
        ):
            return False
        for t in found:
            assert t is not None
            held = self._by_player.get(t.player_id)
            self._drop(t)
            kept = now + keep_s
            self._tickets[t.ticket_id] = dataclasses.replace(
                t, state=MATCHED, plan=plan, alive_until=kept
            )
            self._kept_until[t.ticket_id] = kept
            if held in (None, t.ticket_id):  # still the player's ticket, now a matched one
                self._by_player[t.player_id] = t.ticket_id
        self._claims += 1
        if self._claims % 1024 == 0:  # forget the matched tickets no watcher reads any more
            for ticket_id, until in list(self._kept_until.items()):
                if until < now:
                    self._drop(self._tickets[ticket_id])
        return True
