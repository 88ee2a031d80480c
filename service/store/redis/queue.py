"""The Redis store's matchmaking queue: :class:`~service.store.queue.TicketQueue` in Redis,
each step one Lua script (``scripts/mm_*.lua``), shared by every replica.

Keys (one hash tag, ``{<prefix>:mm}``: one slot of a Cluster, so each script's keys are on
one node): ``:t:<ticket>`` a ticket's hash (``m`` mode, ``p`` player, ``r`` rating, ``q``
queued at, ``a`` alive until (a matched ticket's: kept until), ``e`` entry, ``s`` state
``w``/``m``, ``x`` plan), ``:q:<mode>`` the waiting tickets of a mode (a sorted set by queue
time), ``:p:<player>`` a player's live ticket (waiting, or matched while it is kept). Every
key also expires in Redis (a waiting ticket's :data:`KEY_TTL_MS` after its last step, a
matched one's when its keep ends), so tickets of replicas that crashed do not pile up even
when nobody reads their queue. Whether a ticket is live is decided by the callers' clock
(``a``), as in the memory queue; Redis's own expiry only forgets it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..queue import MATCHED, WAITING, Ticket, TicketQueue
from .connect import Link, Script

KEY_TTL_MS = 3_600_000
"""A waiting ticket's keys expire in Redis this long after its last step at the latest."""


class RedisQueue(TicketQueue):
    """The tickets of one store prefix."""

    def __init__(self, link: Link, prefix: str) -> None:
        self.link = link
        tag = "{" + prefix + ":mm}"
        self._ticket = f"{tag}:t:"
        self._queue = f"{tag}:q:"
        self._player = f"{tag}:p:"
        client = link.client
        self._enqueue = Script(client, "mm_enqueue", mux=link.mux)
        self._waiting = Script(client, "mm_waiting", mux=link.mux)
        self._claim = Script(client, "mm_claim", mux=link.mux)
        self._cancel = Script(client, "mm_cancel", mux=link.mux)
        self._touch = Script(client, "mm_touch", mux=link.mux)

    async def enqueue(self, ticket: Ticket, now: float, *, replace_matched: str = "") -> Ticket:
        t = ticket
        async with self.link.call():
            held = await self._enqueue(
                keys=[self._player + t.player_id, self._ticket + t.ticket_id],
                args=[
                    self._ticket,
                    self._queue,
                    t.ticket_id,
                    t.mode,
                    t.player_id,
                    t.entry,
                    repr(t.rating),
                    repr(t.enqueued_at),
                    repr(t.alive_until),
                    repr(now),
                    KEY_TTL_MS,
                    replace_matched,
                ],
            )
        if len(held) == 1:
            return t
        f = [_raw(v) for v in held]
        return Ticket(
            ticket_id=f[0].decode(),
            mode=f[1].decode(),
            player_id=t.player_id,
            rating=float(f[2]),
            enqueued_at=float(f[3]),
            alive_until=float(f[4]),
            entry=f[5],
            state=MATCHED if f[6] == b"m" else WAITING,
            plan=f[7],
        )

    async def get(self, ticket_id: str, now: float) -> Ticket | None:
        async with self.link.call():
            raw = await self.link.client.hgetall(self._ticket + ticket_id)
        if not raw:
            return None
        f: dict[str, bytes] = {_text(k): _raw(v) for k, v in raw.items()}
        ticket = Ticket(
            ticket_id=ticket_id,
            mode=f["m"].decode(),
            player_id=f["p"].decode(),
            rating=float(f["r"]),
            enqueued_at=float(f["q"]),
            alive_until=float(f["a"]),
            entry=f.get("e", b""),
            state=MATCHED if f.get("s") == b"m" else WAITING,
            plan=f.get("x", b""),
        )
        return ticket if ticket.alive(now) else None

    async def waiting(self, mode: str, now: float) -> list[Ticket]:
        async with self.link.call():
            flat = await self._waiting(
                keys=[self._queue + mode], args=[self._ticket, self._player, repr(now)]
            )
        return [
            Ticket(
                ticket_id=flat[i].decode(),
                mode=mode,
                player_id=flat[i + 1].decode(),
                rating=float(flat[i + 2]),
                enqueued_at=float(flat[i + 3]),
                alive_until=float(flat[i + 4]),
                entry=flat[i + 5],
            )
            for i in range(0, len(flat), 6)
        ]

    async def count(self, mode: str) -> int:
        async with self.link.call():
            return int(await self.link.client.zcard(self._queue + mode))

    async def touch(self, ticket_id: str, alive_until: float, now: float) -> bool:
        async with self.link.call():
            done = await self._touch(
                keys=[self._ticket + ticket_id],
                args=[repr(alive_until), repr(now), KEY_TTL_MS, self._player],
            )
        return int(done) == 1

    async def cancel(self, ticket_id: str) -> bool:
        async with self.link.call():
            done = await self._cancel(
                keys=[self._ticket + ticket_id], args=[self._queue, self._player, ticket_id]
            )
        return int(done) == 1

    async def claim(
        self, ticket_ids: Sequence[str], plan: bytes, now: float, keep_s: float
    ) -> bool:
        async with self.link.call():
            done = await self._claim(
                keys=[self._ticket + i for i in ticket_ids],
                args=[
                    self._ticket,
                    self._queue,
                    self._player,
                    repr(now),
                    max(1, round(keep_s * 1000)),
                    plan,
                    repr(now + keep_s),
                ],
            )
        return int(done) == 1


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _raw(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()
