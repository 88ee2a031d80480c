"""The Redis store's keys (docs/redis-store.md has the table of what each holds).

A table's keys share the hash tag ``{<table id>}`` (one slot of a Cluster); the indexes
across tables are in shards, each in one slot: with one shard (the default) ``{<prefix>:g}``,
the global slot; with more, a table's index entries are in the shard of its id's hash."""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from redis.crc import REDIS_CLUSTER_HASH_SLOTS as SLOTS
from redis.crc import key_slot

STATUSES = ("waiting", "playing", "finished")


class Shard:
    """The key names of one shard of the indexes (all in one slot: its hash tag)."""

    __slots__ = (
        "applied",
        "born",
        "bots",
        "bots_total",
        "claim",
        "due",
        "index",
        "invite_of",
        "invites",
        "lobby",
        "lobby_entries",
        "markers",
        "number",
        "rebuild",
        "status",
    )

    def __init__(self, tag: str, number: int) -> None:
        self.number = number
        g = "{" + tag + "}"
        self.lobby = f"{g}:lobby"
        self.lobby_entries = f"{g}:lobby:e"
        self.due = f"{g}:due"
        self.status = tuple(f"{g}:st:{s}" for s in STATUSES)
        self.invites = f"{g}:inv"
        self.invite_of = f"{g}:invof"
        self.applied = f"{g}:ver"
        self.markers = f"{g}:pend"
        self.born = f"{g}:born"
        self.rebuild = f"{g}:rebuild"
        self.claim = f"{g}:claim"
        self.bots = f"{g}:bots"
        self.bots_total = f"{g}:bots:n"
        self.index = (
            self.lobby,
            self.lobby_entries,
            self.due,
            *self.status,
            self.invites,
            self.invite_of,
            self.applied,
            self.markers,
            self.bots,
            self.bots_total,
        )
        """The keys of the index script, in its order."""


def shard_tags(prefix: str, shards: int) -> list[str]:
    """The hash tags of ``shards`` index shards: ``<prefix>:g`` alone for one (the global
    slot); for more, ``<prefix>:g<N>.<i>.<j>`` with the first ``j`` that puts shard ``i`` in
    the ``i``-th of ``N`` equal ranges of the 16384 slots, so that the shards spread over
    the masters of a Cluster whose masters hold equal ranges (as ``redis-cli --cluster
    create`` makes them). Another ``N`` names other keys: the indexes are rebuilt."""
    if shards == 1:
        return [f"{prefix}:g"]
    tags = []
    for i in range(shards):
        low, high = i * SLOTS // shards, (i + 1) * SLOTS // shards
        j = 0
        while not low <= key_slot(f"{prefix}:g{shards}.{i}.{j}".encode()) < high:
            j += 1
        tags.append(f"{prefix}:g{shards}.{i}.{j}")
    return tags


class Keys:
    """Every key name of one store prefix, with ``shards`` index shards."""

    __slots__ = ("prefix", "shards")

    def __init__(self, prefix: str, shards: int = 1) -> None:
        if shards < 1:
            raise ValueError("index shards must be at least 1")
        self.prefix = prefix
        self.shards = tuple(Shard(tag, i) for i, tag in enumerate(shard_tags(prefix, shards)))
        """The index shards; a table's index entries are in :meth:`shard_of` it."""

    def shard_of(self, table_id: str) -> Shard:
        """The shard of a table's index entries (CRC-32 of its id, modulo the shards)."""
        if len(self.shards) == 1:
            return self.shards[0]
        return self.shards[zlib.crc32(table_id.encode()) % len(self.shards)]

    def group(self, table_ids: Iterable[str]) -> dict[Shard, list[str]]:
        """``table_ids`` by shard (in their order within each)."""
        out: dict[Shard, list[str]] = {}
        for t in table_ids:
            out.setdefault(self.shard_of(t), []).append(t)
        return out

    def table(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}"

    def stream(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}:x"

    def idempotency(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}:i"

    def presence(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}:p"

    def acknowledged(self, table_id: str) -> str:
        """What the replicated acknowledgement writes before its ``WAIT`` (it expires)."""
        return f"{self.prefix}:{{{table_id}}}:w"

    def bucket(self, key: str) -> str:
        return f"{self.prefix}:rl:{key}"

    @property
    def tables_pattern(self) -> str:
        """A ``SCAN`` pattern of the table hashes (and their other keys: see
        :meth:`table_of`)."""
        return f"{self.prefix}:{{*}}"

    def table_of(self, key: str) -> str | None:
        """The table id of a table hash's key; None for any other key."""
        head = f"{self.prefix}:{{"
        if not key.startswith(head) or not key.endswith("}"):
            return None
        return key[len(head) : -1]
