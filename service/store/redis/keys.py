"""The Redis store's keys (docs/redis-store.md has the table of what each holds).

A table's keys share the hash tag ``{<table id>}`` (one slot of a Cluster); the indexes
across tables share ``{<prefix>:g}``, the global slot."""

from __future__ import annotations

STATUSES = ("waiting", "playing", "finished")


class Keys:
    """Every key name of one store prefix."""

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
        "prefix",
        "rebuild",
        "status",
    )

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        g = "{" + prefix + ":g}"
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
            self.lobby, self.lobby_entries, self.due, *self.status, self.invites,
            self.invite_of, self.applied, self.markers, self.bots, self.bots_total,
        )
        """The keys of the index script, in its order."""

    def table(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}"

    def stream(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}:x"

    def idempotency(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}:i"

    def presence(self, table_id: str) -> str:
        return f"{self.prefix}:{{{table_id}}}:p"

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
