"""The metrics page after scripted matches: gRPC server metrics by method and code, with the
names and label values of go-grpc-prometheus (so stock dashboards work), and the game's own
(actions by kind and result, streams, fan-out latency, store latency, timeouts, tables by
state), with the counts the script implies; the process and platform collectors, the build
info, and no ``_created`` series."""

from __future__ import annotations

import asyncio
import platform
import socket
import tomllib
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from service.metrics import GO_CODES
from service.server import Server
from tests.support.wait import eventually
from tute.v1 import action_pb2, card_pb2, rules_pb2, service_pb2, service_pb2_grpc, table_pb2

from .helpers import Stub, auth, table_with_humans

SERVICE = "tute.v1.TuteService"
FINISHED = table_pb2.TABLE_STATUS_FINISHED
GO_CODE = {
    "FAILED_PRECONDITION": "FailedPrecondition",
    "INVALID_ARGUMENT": "InvalidArgument",
    "UNAUTHENTICATED": "Unauthenticated",
}
"""The grpc_code label values go-grpc-prometheus gives these codes."""


class Page:
    """A parsed metrics page."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [
            (s.name, s.labels, s.value)
            for family in text_string_to_metric_families(text)
            for s in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples called ``name`` whose labels include ``labels`` (0: none)."""
        return sum(
            v
            for n, lab, v in self.samples
            if n == name and all(lab.get(k) == want for k, want in labels.items())
        )

    def has(self, name: str, **labels: str) -> bool:
        return any(
            n == name and all(lab.get(k) == want for k, want in labels.items())
            for n, lab, _ in self.samples
        )

    def rpc(self, name: str, method: str, **labels: str) -> float:
        return self.value(name, grpc_service=SERVICE, grpc_method=method, **labels)


def page(server: Server) -> Page:
    return Page(generate_latest(server.metrics.registry).decode())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def http_page(port: int) -> Page:
    def fetch() -> tuple[int, str, str]:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()

    status, ctype, text = await asyncio.to_thread(fetch)
    assert status == 200 and ctype.startswith("text/plain")
    return Page(text)


async def test_metrics_page_after_a_match_of_four_humans(server: Server, stub: Stub) -> None:  # noqa: C901 - one assertion per metric family of the page
    port = free_port()
    server.metrics.serve(port, addr="127.0.0.1")

    seated = await table_with_humans(stub, "parejas", turn_time_s=0, target_points=1)
    tid, tokens = seated.table_id, seated.tokens
    spectator = stub.WatchTable(service_pb2.WatchTableRequest(table_id=tid))
    await spectator.read()  # the snapshot
    seat_stream = stub.WatchTable(
        service_pb2.WatchTableRequest(table_id=tid), metadata=auth(tokens[0])
    )
    await seat_stream.read()
    await eventually(lambda: _eq(page(server).value("tute_watch_streams"), 2))

    ok = {"card": 0, "sing": 0, "tute": 0}
    rejected: dict[tuple[str, str], int] = {}
    errors: dict[str, int] = {}
    gets = 0

    async def submit(token: str | None, action: action_pb2.Action) -> None:
        try:
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(table_id=tid, action=action),
                metadata=auth(token) if token else None,
            )
        except grpc.aio.AioRpcError as err:
            errors[err.code().name] = errors.get(err.code().name, 0) + 1
            raise

    done = False
    while not done:
        actor = None
        for seat, token in tokens.items():
            view = (
                await stub.GetTable(service_pb2.GetTableRequest(table_id=tid), metadata=auth(token))
            ).view
            gets += 1
            if view.status == FINISHED:
                done = True
                break
            if view.legal_actions:
                actor = seat, token, view
                break
        if done:
            break
        assert actor is not None, "nobody could act"
        seat, token, view = actor
        if view.current_trick.number == 3 and not rejected:
            # a card by a seat off turn, and a card nobody holds here: both rejected
            other = tokens[(seat + 1) % 4]
            other_view = (
                await stub.GetTable(service_pb2.GetTableRequest(table_id=tid), metadata=auth(other))
            ).view
            gets += 1
            with pytest.raises(grpc.aio.AioRpcError):
                await submit(other, action_pb2.Action(play_card=other_view.hand[0]))
            rejected[("card", "not_your_turn")] = 1
            held = {(c.suit, c.rank) for c in view.hand}
            missing = next(
                card_pb2.Card(suit=s, rank=r)  # type: ignore[arg-type]
                for s in range(1, 5)
                for r in (1, 2, 3, 4, 5, 6, 7, 10, 11, 12)
                if (s, r) not in held
            )
            with pytest.raises(grpc.aio.AioRpcError):
                await submit(token, action_pb2.Action(play_card=missing))
            rejected[("card", "card_not_held")] = 1
            with pytest.raises(grpc.aio.AioRpcError):
                await submit(token, action_pb2.Action())  # no kind: INVALID_ARGUMENT
            with pytest.raises(grpc.aio.AioRpcError):
                await submit(None, view.legal_actions[0])  # no token: UNAUTHENTICATED
        action = view.legal_actions[-1]  # declarations come last: sing when possible
        await submit(token, action)
        kind = action.WhichOneof("kind")
        ok[{"play_card": "card", "sing": "sing", "declare_tute": "tute"}[kind]] += 1
    with pytest.raises(grpc.aio.AioRpcError):
        await stub.GetTable(service_pb2.GetTableRequest(table_id="no-such-table"))

    final = (await stub.GetTable(service_pb2.GetTableRequest(table_id=tid))).view
    gets += 1
    # both streams read every event so far: each delivery observed the fan-out latency
    live = 0
    for call in (spectator, seat_stream):
        while True:
            msg = await asyncio.wait_for(call.read(), 5)
            live += 1
            if msg.event.sequence == final.last_event_sequence:
                break

    m = await http_page(port)
    n_ok = sum(ok.values())
    n_rejected = sum(rejected.values())
    assert ok["card"] == 40 or ok["tute"] == 1, "one hand of 4 players: 40 cards (or a tute)"
    # gRPC server metrics
    assert errors == {"FAILED_PRECONDITION": 2, "INVALID_ARGUMENT": 1, "UNAUTHENTICATED": 1}
    started = n_ok + 4
    assert m.rpc("grpc_server_started_total", "SubmitAction", grpc_type="unary") == started
    assert m.rpc("grpc_server_handled_total", "SubmitAction", grpc_code="OK") == n_ok
    for code, count in errors.items():
        assert m.rpc("grpc_server_handled_total", "SubmitAction", grpc_code=GO_CODE[code]) == count
        assert m.rpc("grpc_server_handled_total", "SubmitAction", grpc_code=code) == 0
    # every request is a message received; only the answered ones sent a message back
    assert m.rpc("grpc_server_msg_received_total", "SubmitAction", grpc_type="unary") == started
    assert m.rpc("grpc_server_msg_sent_total", "SubmitAction", grpc_type="unary") == n_ok
    assert m.rpc("grpc_server_handling_seconds_count", "SubmitAction") == started
    assert m.rpc("grpc_server_handling_seconds_sum", "SubmitAction") > 0
    assert m.has("grpc_server_handling_seconds_bucket", grpc_method="SubmitAction", le="+Inf")
    assert m.rpc("grpc_server_handled_total", "GetTable", grpc_code="OK") == gets
    assert m.rpc("grpc_server_handled_total", "GetTable", grpc_code="NotFound") == 1
    assert m.rpc("grpc_server_handled_total", "JoinTable", grpc_code="OK") == 3
    assert m.rpc("grpc_server_handled_total", "CreateTable", grpc_code="OK") == 1
    assert m.rpc("grpc_server_started_total", "WatchTable", grpc_type="server_stream") == 2
    # a stream's messages: its one request, and every message it sent (counted once sent)
    assert m.rpc("grpc_server_msg_received_total", "WatchTable", grpc_type="server_stream") == 2
    # sent: the two snapshots and every event read since (a message counts once grpc has
    # taken it, which may be just after the client read it)
    await eventually(
        lambda: _eq(page(server).rpc("grpc_server_msg_sent_total", "WatchTable"), 2 + live)
    )
    # the game's own
    assert m.value("tute_actions_total", kind="card", result="applied") == ok["card"]
    assert m.value("tute_actions_total", kind="sing", result="applied") == ok["sing"]
    for (kind, reason), count in rejected.items():
        assert m.value("tute_actions_total", kind=kind, result=reason) == count
    assert m.value("tute_actions_total") == n_ok + n_rejected
    assert m.value("tute_watch_streams") == 2
    assert m.value("tute_event_publish_seconds_count") == live
    assert m.value("tute_event_publish_seconds_sum") >= 0
    commits = final.version - 1  # every committed change raised the version by one
    assert m.value("tute_store_seconds_count", op="commit") == commits
    assert m.value("tute_store_seconds_count", op="create") == 1
    assert m.value("tute_store_seconds_count", op="load") >= n_ok + gets
    assert m.value("tute_timeouts_total") == 0

    # streams that end leave the gauge and are counted as handled
    spectator.cancel()
    seat_stream.cancel()
    await eventually(lambda: _eq(page(server).value("tute_watch_streams"), 0))
    await eventually(
        lambda: _eq(
            page(server).rpc("grpc_server_handled_total", "WatchTable", grpc_code="Canceled"), 2
        )
    )


def _eq(got: float, want: float) -> None:
    assert got == want, (got, want)


async def test_timeouts_bots_and_tables_by_state(server: Server, stub: Stub) -> None:
    # a waiting table, a finished one (a player left the started match), and a playing one
    # where a human sits with three bots and lets the one-second clock play once for it
    await stub.CreateTable(service_pb2.CreateTableRequest())
    gone = await table_with_humans(stub, "corriente-6")
    await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=gone.table_id), metadata=auth(gone.tokens[0])
    )
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="parejas", options=rules_pb2.RuleOptions(turn_time_s=1)),
            take_seat=True,
            display_name="ana",
        )
    )
    tid, token = created.table_id, created.seat_token
    for _ in range(3):
        await stub.AddBot(service_pb2.AddBotRequest(table_id=tid), metadata=auth(token))

    def timed_out_and_bots_moved() -> None:
        # the human may lead the first trick: its clock then runs out before any bot moves
        p = page(server)
        _eq(p.value("tute_timeouts_total"), 1)
        assert p.value("tute_bot_moves_total") >= 1

    await eventually(timed_out_and_bots_moved, timeout=8)
    m = page(server)
    assert m.value("tute_actions_total", kind="timeout", result="applied") == 1
    assert m.value("tute_actions_total", kind="forfeit", result="applied") == 1
    bots = m.value("tute_bot_moves_total")
    assert bots >= 1
    assert m.value("tute_actions_total", kind="bot", result="applied") == bots

    # the human plays on: its cards count as card actions, the bots' as bot moves
    cards = 0
    while cards < 3:
        view = (
            await stub.GetTable(service_pb2.GetTableRequest(table_id=tid), metadata=auth(token))
        ).view
        if view.legal_actions:
            cards_only = [a for a in view.legal_actions if a.HasField("play_card")]
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(table_id=tid, action=cards_only[0]),
                metadata=auth(token),
            )
            cards += 1
        else:
            await asyncio.sleep(0.02)
    m = page(server)
    assert m.value("tute_actions_total", kind="card", result="applied") == cards
    assert m.value("tute_bot_moves_total") > bots

    # the scheduler refreshes the tables gauge every ~2 s
    def tables() -> None:
        p = page(server)
        got = {s: p.value("tute_tables", state=s) for s in ("waiting", "playing", "finished")}
        assert got == {"waiting": 1, "playing": 1, "finished": 1}, got

    await eventually(tables, timeout=5)


def test_every_status_code_has_its_go_grpc_prometheus_name() -> None:
    go_names = [
        "OK",
        "Canceled",
        "Unknown",
        "InvalidArgument",
        "DeadlineExceeded",
        "NotFound",
        "AlreadyExists",
        "PermissionDenied",
        "ResourceExhausted",
        "FailedPrecondition",
        "Aborted",
        "OutOfRange",
        "Unimplemented",
        "Internal",
        "Unavailable",
        "DataLoss",
        "Unauthenticated",
    ]
    codes = sorted(grpc.StatusCode, key=lambda c: c.value[0])
    assert [GO_CODES[c.name] for c in codes] == go_names


async def test_process_platform_and_build_series_and_no_created(server: Server) -> None:
    m = page(server)
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
        "python_info",
        "python_gc_collections_total",
    ):
        assert m.has(name), name
    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    build = [(lab, v) for n, lab, v in m.samples if n == "tute_build_info"]
    assert build == [
        ({"version": version, "engine": "python", "python": platform.python_version()}, 1.0)
    ]
    # counters and histograms (with samples: a call was made above) carry no _created series
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        await service_pb2_grpc.TuteServiceStub(channel).ListTables(service_pb2.ListTablesRequest())
    text = page(server).text
    assert "grpc_server_handled_total{" in text and "grpc_server_handling_seconds_bucket" in text
    assert "_created" not in text


async def test_health_watch_and_reflection_streams_are_counted(server: Server) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        # a server stream that sends with context.write
        watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
        first = await asyncio.wait_for(watch.read(), 5)
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        # a bidirectional stream: two requests, two answers, then the client closes
        refl = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo()
        for _ in range(2):
            await refl.write(reflection_pb2.ServerReflectionRequest(list_services=""))
            answer = await asyncio.wait_for(refl.read(), 5)
            names = {s.name for s in answer.list_services_response.service}
            assert SERVICE in names, names
        await refl.done_writing()
        assert await asyncio.wait_for(refl.read(), 5) is grpc.aio.EOF  # type: ignore[attr-defined]
        watch.cancel()

        health, refl_name = "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"

        def counted() -> None:
            m = page(server)
            by = {"grpc_service": health, "grpc_method": "Watch", "grpc_type": "server_stream"}
            assert m.value("grpc_server_started_total", **by) == 1
            assert m.value("grpc_server_msg_received_total", **by) == 1
            assert m.value("grpc_server_msg_sent_total", **by) == 1
            assert m.value("grpc_server_handled_total", grpc_code="Canceled", **by) == 1
            by = {
                "grpc_service": refl_name,
                "grpc_method": "ServerReflectionInfo",
                "grpc_type": "bidi_stream",
            }
            assert m.value("grpc_server_started_total", **by) == 1
            assert m.value("grpc_server_msg_received_total", **by) == 2
            assert m.value("grpc_server_msg_sent_total", **by) == 2
            assert m.value("grpc_server_handled_total", grpc_code="OK", **by) == 1

        await eventually(counted)


def test_lock_free_families_print_what_prometheus_client_prints() -> None:
    """The server's counters and histograms (service.metrics.FastCounter and FastHistogram:
    no lock per update) write the page prometheus_client's own Counter and Histogram write
    for the same updates: names, label order and values, buckets (cumulative, ``le``
    spelled alike, +Inf), sums and counts; unlabelled ones at zero before any update."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics

    from service.metrics import FastCounter, FastHistogram

    disable_created_metrics()
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    bounds = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1.0, 2.5)
    made = []
    for registry, counter, histogram in (
        (theirs, Counter, Histogram),
        (ours, FastCounter, FastHistogram),
    ):
        made.append(
            (
                counter("t_calls_total", "Calls.", ("kind", "code"), registry=registry),
                counter("t_plain_total", "Plain.", registry=registry),
                counter("t_unused_total", "Never incremented.", registry=registry),
                histogram("t_seconds", "Latency.", ("op",), buckets=bounds, registry=registry),
                histogram("t_plain_seconds", "Plain latency.", buckets=bounds, registry=registry),
                histogram("t_unused_seconds", "Never observed.", buckets=bounds, registry=registry),
            )
        )
    for calls, plain, _, seconds, plain_seconds, _ in made:
        calls.labels("unary", "OK").inc()
        calls.labels("unary", "OK").inc(2.5)
        calls.labels("stream", "NotFound").inc()
        plain.inc()
        values = (0.0, 0.0005, 0.0007, 0.001, 0.3, 2.5, 7.0)  # on bounds, between, above
        for v in values:
            seconds.labels("commit").observe(v)
        if isinstance(plain_seconds, FastHistogram):
            plain_seconds.observe_many(values[:3])  # a batch's observations in one call
            plain_seconds.observe_many([])
            for v in values[3:]:
                plain_seconds.observe(v)
        else:
            for v in values:
                plain_seconds.observe(v)
        seconds.labels("load").observe(0.002)
    assert generate_latest(ours).decode() == generate_latest(theirs).decode()
    fast_calls = made[1][0]
    with pytest.raises(ValueError, match="only goes up"):
        fast_calls.labels("unary", "OK").inc(-1)
    with pytest.raises(ValueError, match="labels"):
        fast_calls.labels("unary")
    with pytest.raises(ValueError, match="use labels"):
        fast_calls.inc()
    assert ours.get_sample_value("t_calls_total", {"kind": "unary", "code": "OK"}) == 3.5
