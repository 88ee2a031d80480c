"""A real Redis Cluster with replicas for failover tests: masters die, replicas take over,
slots move.

:class:`ReplicatedCluster` runs ``masters`` primaries with ``replicas`` replicas each, every
node a ``redis-server --cluster-enabled yes`` subprocess on a free port (its cluster bus on
port + 10000) with its own directory, joined with ``redis-cli --cluster create
--cluster-replicas N``. The node timeout is short (``node_timeout_ms``, 1000 by default) so a
failover takes a couple of seconds; ``appendonly`` turns the append-only file on (fsynced
every second, or on every write with ``appendfsync="always"``).

Everything that waits waits for the event itself (``CLUSTER INFO``/``CLUSTER NODES`` as the
nodes report them) with a bound, and says what it waited for when the bound is hit.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from .redis import _ClusterNode
from .wait import wait_until

__all__ = ["ClusterNode", "NodeInfo", "ReplicatedCluster"]


class ClusterNode(_ClusterNode):
    """One ``redis-server --cluster-enabled yes`` of a :class:`ReplicatedCluster`."""

    def __init__(
        self, directory: Path, *, node_timeout_ms: int, appendonly: bool, appendfsync: str
    ) -> None:
        self.node_timeout_ms = node_timeout_ms
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        super().__init__(directory)

    def _args(self) -> list[str]:
        # the later of two values of an option wins
        return [
            *super()._args(),
            # joining goes faster with the long timeout; start() shortens it after
            "--cluster-node-timeout",
            str(max(self.node_timeout_ms, 5000)),
            # a replica always may take over (the tests kill masters on purpose)
            "--cluster-replica-validity-factor",
            "0",
            # a replica's first sync at once (the default waits 5 s for more replicas)
            "--repl-diskless-sync-delay",
            "0",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            self.appendfsync,
        ]

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2, socket_connect_timeout=2)


@dataclass(frozen=True)
class NodeInfo:
    """One line of ``CLUSTER NODES``."""

    node_id: str
    port: int
    master: bool
    master_id: str  # "" for a master
    failed: bool  # flagged fail (or pfail: suspected) by the node that was asked
    connected: bool
    slots: tuple[tuple[int, int], ...]

    def owns(self, slot: int) -> bool:
        return any(a <= slot <= b for a, b in self.slots)


def _parse_nodes(text: str) -> list[NodeInfo]:
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 8:
            continue
        node_id, addr, flags, master_id, _ping, _pong, _epoch, link, *slots = parts
        port = int(addr.split("@", 1)[0].rsplit(":", 1)[1])
        spans = []
        for s in slots:
            if s.startswith("["):
                continue  # a slot being migrated or imported
            a, _, b = s.partition("-")
            spans.append((int(a), int(b or a)))
        fl = flags.split(",")
        rows.append(
            NodeInfo(
                node_id=node_id,
                port=port,
                master="master" in fl,
                master_id="" if master_id == "-" else master_id,
                failed="fail" in fl or "fail?" in fl,
                connected=link == "connected",
                slots=tuple(spans),
            )
        )
    return rows


class ReplicatedCluster:
    """A Redis Cluster of ``masters`` primaries with ``replicas`` replicas each."""

    def __init__(
        self,
        directory: Path,
        *,
        masters: int = 3,
        replicas: int = 1,
        node_timeout_ms: int = 1000,
        appendonly: bool = True,
        appendfsync: str = "everysec",
    ) -> None:
        cli = shutil.which("redis-cli")
        if cli is None:
            pytest.fail(
                "redis-cli is not installed: the Redis Cluster tests need it "
                "(run `make system-deps`, or `apt-get install redis-server`)",
                pytrace=False,
            )
        self.cli = cli
        self.directory = directory
        self.replicas_per_master = replicas
        self.node_timeout_ms = node_timeout_ms
        self.nodes = [
            ClusterNode(
                directory / f"node-{i}",
                node_timeout_ms=node_timeout_ms,
                appendonly=appendonly,
                appendfsync=appendfsync,
            )
            for i in range(masters * (1 + replicas))
        ]
        self.masters_wanted = masters
        self._orphans: dict[int, tuple[tuple[int, int], ...]] = {}
        self.why = ""

    # -- start and stop ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The store URL: any live node (the client discovers the others)."""
        return f"redis://127.0.0.1:{self.live()[0].port}/0?cluster=1"

    def start(self, timeout: float = 60.0) -> ReplicatedCluster:
        try:
            for node in self.nodes:
                node.start()
            made = subprocess.run(
                [
                    self.cli,
                    "--cluster",
                    "create",
                    *(f"127.0.0.1:{n.port}" for n in self.nodes),
                    "--cluster-replicas",
                    str(self.replicas_per_master),
                    "--cluster-yes",
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            if made.returncode != 0:
                raise RuntimeError(
                    f"redis-cli --cluster create failed:\n{made.stdout}{made.stderr}"
                )
            self.wait_for(self.healthy, timeout, "every node ok, every replica in sync")
            for node in self.nodes:  # short from now on (joining goes faster without)
                with node.client() as r:
                    r.config_set("cluster-node-timeout", self.node_timeout_ms)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def live(self) -> list[ClusterNode]:
        return [n for n in self.nodes if n.alive]

    def node(self, port: int) -> ClusterNode:
        return next(n for n in self.nodes if n.port == port)

    # -- what the nodes say --------------------------------------------------------------------

    def _ask(self, node: ClusterNode, *command: str) -> str:
        try:
            with node.client() as r:
                reply = r.execute_command(*command)
        except redis.RedisError:
            return ""
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def state_ok(self, node: ClusterNode) -> bool:
        return "cluster_state:ok" in self._ask(node, "CLUSTER", "INFO")

    def view(self, node: ClusterNode | None = None) -> list[NodeInfo]:
        """``CLUSTER NODES`` as ``node`` (default: the first live one) sees it."""
        return _parse_nodes(self._ask(node or self.live()[0], "CLUSTER", "NODES"))

    def masters(self) -> list[NodeInfo]:
        return [n for n in self.view() if n.master and n.slots]

    def slot_of(self, key: str) -> int:
        return int(self._ask(self.live()[0], "CLUSTER", "KEYSLOT", key))

    def master_of(self, key_or_slot: str | int) -> ClusterNode:
        """The live node serving a key's slot (or a slot), as every live node agrees."""
        slot = key_or_slot if isinstance(key_or_slot, int) else self.slot_of(key_or_slot)
        for info in self.masters():
            if info.owns(slot):
                return self.node(info.port)
        raise LookupError(f"no master serves slot {slot}")

    def replicas_of(self, master: ClusterNode) -> list[ClusterNode]:
        infos = self.view()
        mid = next(i.node_id for i in infos if i.port == master.port)
        return [self.node(i.port) for i in infos if i.master_id == mid]

    def node_id(self, node: ClusterNode) -> str:
        return self._ask(node, "CLUSTER", "MYID")

    def healthy(self) -> bool:
        """Every live node reports ``cluster_state:ok`` and agrees on the masters, each
        master has its replicas, and each replica's link to its master is up (else
        ``why`` says what is missing)."""
        live = self.live()
        bad = [n.port for n in live if not self.state_ok(n)]
        if bad:
            return self._no(f"cluster_state not ok on {bad}")
        views = [self.view(n) for n in live]
        ports = {n.port for n in live}
        masters = {
            frozenset((i.port, i.slots) for i in v if i.master and i.slots and i.port in ports)
            for v in views
        }
        if len(masters) != 1 or len(next(iter(masters))) != self.masters_wanted:
            return self._no(f"the nodes disagree on the masters: {masters}")
        for info in views[0]:
            if info.port not in ports or info.master:
                continue
            try:
                with self.node(info.port).client() as r:
                    link = r.info("replication").get("master_link_status")
            except redis.RedisError as exc:
                return self._no(f"replica {info.port}: {exc}")
            if link != "up":
                return self._no(f"replica {info.port}: link {link}")
        return True

    def _no(self, why: str) -> bool:
        self.why = why
        return False

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        self.why = ""
        self.wait_for_event(condition, timeout, what, lambda: self.why)

    @staticmethod
    def wait_for_event(
        condition: Callable[[], bool], timeout: float, what: str, why: Callable[[], str] = str
    ) -> None:
        """Return once ``condition()`` holds; AssertionError after ``timeout`` seconds."""
        wait_until(condition, timeout=timeout, what=what, why=why)

    # -- faults --------------------------------------------------------------------------------

    def kill_master(self, node: ClusterNode) -> tuple[tuple[int, int], ...]:
        """kill -9 ``node`` (a master); returns the slot ranges it served."""
        slots = next(i.slots for i in self.view() if i.port == node.port)
        self._orphans[node.port] = slots
        node.kill()
        return slots

    def wait_for_failover(self, killed: ClusterNode, timeout: float = 30.0) -> ClusterNode:
        """Wait until one of ``killed``'s replicas is a master serving the slots it had and
        every live node says ``cluster_state:ok`` and agrees; returns the promoted node."""
        slots = self._orphans[killed.port]
        promoted: list[ClusterNode] = []

        def done() -> bool:
            live = self.live()
            ports = {n.port for n in live}
            if not all(self.state_ok(n) for n in live):
                return False
            owners = set()
            for n in live:
                owner = [i.port for i in self.view(n) if i.master and i.slots == slots]
                if len(owner) != 1 or owner[0] not in ports:
                    return False
                owners.add(owner[0])
            if len(owners) != 1:
                return False
            promoted[:] = [self.node(owners.pop())]
            return True

        self.wait_for(done, timeout, f"a replica taking over the slots of {killed.port}")
        return promoted[0]

    def restart(self, node: ClusterNode, timeout: float = 60.0) -> None:
        """Start a killed node again on its port (it rejoins, as a replica of its successor
        when one took over) and wait until the cluster is healthy again."""
        node.start(same_port=True)
        with node.client() as r:
            r.config_set("cluster-node-timeout", self.node_timeout_ms)
        self.wait_for(self.healthy, timeout, f"node {node.port} back in the cluster")

    def heal(self, timeout: float = 60.0) -> None:
        """Restart every node that is down; wait until the cluster is healthy."""
        for node in self.nodes:
            if not node.alive:
                self.restart(node, timeout)
        self.wait_for(self.healthy, timeout, "the cluster healthy")

    def reshard(
        self, slots: int, source: ClusterNode, target: ClusterNode, timeout: float = 120.0
    ) -> None:
        """``redis-cli --cluster reshard``: move the ``slots`` lowest slots of ``source`` to
        ``target``, keys and all, while the cluster serves calls."""
        moved = subprocess.run(
            [
                self.cli,
                "--cluster",
                "reshard",
                f"127.0.0.1:{source.port}",
                "--cluster-from",
                self.node_id(source),
                "--cluster-to",
                self.node_id(target),
                "--cluster-slots",
                str(slots),
                "--cluster-yes",
                "--cluster-pipeline",
                "100",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if moved.returncode != 0:
            raise RuntimeError(
                f"redis-cli --cluster reshard failed:\n{moved.stdout[-2000:]}{moved.stderr}"
            )
        self.wait_for(self.healthy, timeout, "the cluster settled after resharding")

    def slots_of(self, node: ClusterNode) -> list[int]:
        info = next(i for i in self.view() if i.port == node.port)
        return [s for a, b in info.slots for s in range(a, b + 1)]
