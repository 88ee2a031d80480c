"""The HTTP port for browsers: Connect and gRPC-Web on a real server (loopback, free port).

Unary and server-streaming calls through connectrpc's own client, the errors' ``google.rpc``
details in Connect's error JSON (read from the raw HTTP answer too) and gRPC-Web's trailer, a
CORS preflight, metrics by protocol, and a stream whose client goes away leaving no watcher.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import socket
from collections.abc import AsyncIterator

import pytest
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.rpc import error_details_pb2
from prometheus_client import generate_latest

from service.server import Server, create_server
from service.web import bind
from tests.service.conftest import FAST
from tests.support.wait import eventually
from tute.v1 import matchmaking_pb2, rules_pb2, service_connect, service_pb2, view_pb2

WEB = dataclasses.replace(FAST, http_port=0)
"""The test servers' settings with a free HTTP port."""
PROTOCOLS = {"connect": ProtocolType.CONNECT, "grpcweb": ProtocolType.GRPC_WEB}


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = await create_server(dataclasses.replace(WEB, cors_origins="https://tute.example"))
    try:
        yield srv
    finally:
        await srv.shutdown()


@pytest.fixture(params=sorted(PROTOCOLS))
async def client(
    server: Server, request: pytest.FixtureRequest
) -> AsyncIterator[service_connect.TuteServiceClient]:
    async with service_connect.TuteServiceClient(
        f"http://127.0.0.1:{server.http_port}", protocol=PROTOCOLS[request.param]
    ) as c:
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def reason_of(err: ConnectError) -> str:
    for detail in err.details:
        if detail.type_name == "google.rpc.ErrorInfo":
            info = error_details_pb2.ErrorInfo.FromString(detail.message_bytes)
            assert info.domain == "tute.v1"
            return info.reason
    raise AssertionError(f"no ErrorInfo in {err.code} {err.message!r}")


async def four_humans(client: service_connect.TuteServiceClient) -> tuple[str, dict[int, str]]:
    created = await client.create_table(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="parejas"), take_seat=True, display_name="p0"
        )
    )
    tokens = {created.seat: created.seat_token}
    for i in range(1, 4):
        joined = await client.join_table(
            service_pb2.JoinTableRequest(table_id=created.table_id, display_name=f"p{i}")
        )
        tokens[joined.seat] = joined.seat_token
    return created.table_id, tokens


async def view(
    client: service_connect.TuteServiceClient, tid: str, token: str
) -> view_pb2.TableView:
    res = await client.get_table(service_pb2.GetTableRequest(table_id=tid), headers=bearer(token))
    return res.view


async def test_unary_calls_answer_as_on_the_native_port(
    client: service_connect.TuteServiceClient,
) -> None:
    created = await client.create_table(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="corriente-6"), take_seat=True, display_name="Ana"
        )
    )
    assert created.seat == 0 and created.seat_token and created.owner_token
    bot = await client.add_bot(
        service_pb2.AddBotRequest(table_id=created.table_id, level="easy"),
        headers=bearer(created.owner_token),
    )
    assert bot.seat == 1
    v = await view(client, created.table_id, created.seat_token)
    assert v.my_seat == 0 and len(v.hand) == 6  # the seat's own cards, by its token
    spectator = (
        await client.get_table(service_pb2.GetTableRequest(table_id=created.table_id))
    ).view
    assert not spectator.HasField("my_seat") and not spectator.hand


async def test_a_stream_sends_the_snapshot_then_live_events(
    client: service_connect.TuteServiceClient,
) -> None:
    created = await client.create_table(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="corriente-6"), take_seat=True, display_name="Ana"
        )
    )
    stream = client.watch_table(
        service_pb2.WatchTableRequest(table_id=created.table_id), headers=bearer(created.seat_token)
    )
    first = await anext(stream)
    assert first.WhichOneof("kind") == "snapshot" and first.snapshot.my_seat == 0
    await client.add_bot(
        service_pb2.AddBotRequest(table_id=created.table_id), headers=bearer(created.owner_token)
    )
    kinds: list[str] = []
    async for msg in stream:
        kinds.append(msg.event.WhichOneof("kind"))
        if msg.event.HasField("turn_started") and msg.event.turn_started.seat == 0:
            assert msg.event.turn_started.legal_actions  # our own copy lists what we may do
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert kinds[:3] == ["seat_joined", "match_started", "hand_dealt"]


async def test_ranked_matchmaking_over_the_browser_transports(
    client: service_connect.TuteServiceClient,
) -> None:
    """CreatePlayer, FindMatch, WatchTicket, GetPlayer and ListLeaderboard through the Connect
    wrapper: two guests of 2p are matched."""
    created = [
        await client.create_player(service_pb2.CreatePlayerRequest(display_name=name))
        for name in ("Uno", "Dos")
    ]
    tokens = [c.player_token for c in created]

    async def queue(token: str) -> matchmaking_pb2.WatchTicketResponse:
        found = await client.find_match(
            service_pb2.FindMatchRequest(mode="2p"), headers=bearer(token)
        )
        last = None
        async for msg in client.watch_ticket(
            service_pb2.WatchTicketRequest(ticket_id=found.ticket_id), headers=bearer(token)
        ):
            last = msg
        assert last is not None
        return last

    ends = await asyncio.wait_for(asyncio.gather(*(queue(t) for t in tokens)), 30)
    assert {e.WhichOneof("progress") for e in ends} == {"matched"}
    assert len({e.matched.table_id for e in ends}) == 1
    assert sorted(e.matched.seat for e in ends) == [0, 1]
    with pytest.raises(ConnectError) as err:
        await client.find_match(service_pb2.FindMatchRequest(mode="9p"), headers=bearer("x"))
    assert reason_of(err.value) == "INVALID_ARGUMENT"
    with pytest.raises(ConnectError) as err:
        await client.find_match(service_pb2.FindMatchRequest(mode="2p"), headers=bearer("x"))
    assert reason_of(err.value) == "UNKNOWN_PLAYER"
    me = created[0].player
    got = await client.get_player(service_pb2.GetPlayerRequest(player_id=me.player_id))
    assert got.player.display_name == "Uno"
    assert [r.mode for r in got.player.ratings] == ["2p", "3p", "4p"]
    board = await client.list_leaderboard(service_pb2.ListLeaderboardRequest(mode="2p"))
    assert list(board.entries) == []  # nobody finished a ranked match yet
    mine = await client.list_matches(
        service_pb2.ListMatchesRequest(player_id=me.player_id), headers=bearer(tokens[0])
    )
    assert list(mine.matches) == []


async def test_an_illegal_card_is_failed_precondition_must_follow_suit(
    client: service_connect.TuteServiceClient,
) -> None:
    tid, tokens = await four_humans(client)
    v = await view(client, tid, tokens[(await view(client, tid, tokens[0])).turn_seat])
    leader = v.turn_seat
    follower = (leader + 1) % 4
    theirs = (await view(client, tid, tokens[follower])).hand
    lead = next(c for c in v.hand if any(h.suit == c.suit for h in theirs))
    await client.submit_action(
        service_pb2.SubmitActionRequest(table_id=tid, action={"play_card": lead}),
        headers=bearer(tokens[leader]),
    )
    other = next(c for c in theirs if c.suit != lead.suit)
    with pytest.raises(ConnectError) as caught:
        await client.submit_action(
            service_pb2.SubmitActionRequest(table_id=tid, action={"play_card": other}),
            headers=bearer(tokens[follower]),
        )
    assert caught.value.code.name == "FAILED_PRECONDITION"
    assert reason_of(caught.value) == "MUST_FOLLOW_SUIT"


async def test_a_stale_version_is_aborted_with_the_current_one(
    client: service_connect.TuteServiceClient,
) -> None:
    tid, tokens = await four_humans(client)
    v = await view(client, tid, tokens[0])
    mine = await view(client, tid, tokens[v.turn_seat])
    with pytest.raises(ConnectError) as caught:
        await client.submit_action(
            service_pb2.SubmitActionRequest(
                table_id=tid, action={"play_card": mine.hand[0]}, expected_version=mine.version - 1
            ),
            headers=bearer(tokens[v.turn_seat]),
        )
    assert caught.value.code.name == "ABORTED"
    assert reason_of(caught.value) == "STALE_VERSION"
    info = next(
        error_details_pb2.ErrorInfo.FromString(d.message_bytes)
        for d in caught.value.details
        if d.type_name == "google.rpc.ErrorInfo"
    )
    assert info.metadata["current_version"] == str(mine.version)


async def _http(port: int, request: bytes) -> tuple[str, dict[str, str], bytes]:
    """One raw HTTP/1.1 exchange (``Connection: close``): status line, headers, body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    raw = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = _dechunk(body)
    return lines[0], headers, body


def _dechunk(raw: bytes) -> bytes:
    out = b""
    while raw:
        size, _, rest = raw.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out, raw = out + rest[:n], rest[n + 2 :]
    return out


def _post(path: str, body: bytes, *extra: str) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Connect-Protocol-Version: 1",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def test_connects_error_json_carries_the_details(server: Server) -> None:
    body = json.dumps({"rules": {"preset": "no-such-preset"}}).encode()
    status, headers, raw = await _http(
        server.http_port, _post("/tute.v1.TuteService/CreateTable", body)
    )
    assert status.split()[1] == "400", status
    assert headers["content-type"].startswith("application/json")
    err = json.loads(raw)
    assert err["code"] == "invalid_argument"
    types = {d["type"]: d["value"] for d in err["details"]}
    info = error_details_pb2.ErrorInfo.FromString(
        base64.b64decode(types["google.rpc.ErrorInfo"] + "==")
    )
    assert (info.domain, info.reason) == ("tute.v1", "INVALID_OPTION")
    bad = error_details_pb2.BadRequest.FromString(
        base64.b64decode(types["google.rpc.BadRequest"] + "==")
    )
    assert [v.field for v in bad.field_violations] == ["rules.preset"]


async def test_a_body_that_does_not_parse_is_malformed_request(server: Server) -> None:
    status, _, raw = await _http(
        server.http_port, _post("/tute.v1.TuteService/GetTable", b"{not json")
    )
    err = json.loads(raw)
    assert status.split()[1] == "400" and err["code"] == "invalid_argument"
    detail = base64.b64decode(err["details"][0]["value"] + "==")
    info = error_details_pb2.ErrorInfo.FromString(detail)
    assert info.reason == "MALFORMED_REQUEST"


async def test_a_cors_preflight_allows_the_configured_origin_only(server: Server) -> None:
    def preflight(origin: str) -> bytes:
        return (
            "\r\n".join(
                [
                    "OPTIONS /tute.v1.TuteService/CreateTable HTTP/1.1",
                    "Host: 127.0.0.1",
                    f"Origin: {origin}",
                    "Access-Control-Request-Method: POST",
                    "Access-Control-Request-Headers: "
                    "authorization, content-type, connect-protocol-version",
                    "Connection: close",
                ]
            )
            + "\r\n\r\n"
        ).encode()

    status, headers, _ = await _http(server.http_port, preflight("https://tute.example"))
    assert status.split()[1] == "204", status
    assert headers["access-control-allow-origin"] == "https://tute.example"
    assert "POST" in headers["access-control-allow-methods"]
    allowed = {h.strip() for h in headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "connect-protocol-version", "x-grpc-web"} <= allowed
    status, headers, _ = await _http(server.http_port, preflight("https://evil.example"))
    assert status.split()[1] == "403" and "access-control-allow-origin" not in headers
    # the call itself names the origin and exposes the gRPC-Web trailers to the page
    _, headers, _ = await _http(
        server.http_port,
        _post("/tute.v1.TuteService/ListTables", b"{}", "Origin: https://tute.example"),
    )
    assert headers["access-control-allow-origin"] == "https://tute.example"
    assert "grpc-status-details-bin" in headers["access-control-expose-headers"]


async def test_metrics_name_the_protocol(
    server: Server, client: service_connect.TuteServiceClient
) -> None:
    await client.list_tables(service_pb2.ListTablesRequest())
    page = generate_latest(server.metrics.registry).decode()
    protocol = "connect" if client._protocol.__class__.__name__.startswith("Connect") else "grpcweb"
    line = (
        f'grpc_server_handled_total{{grpc_code="OK",grpc_method="ListTables",'
        f'grpc_service="tute.v1.TuteService",grpc_type="unary",protocol="{protocol}"}} 1.0'
    )
    assert line in page


async def test_a_stream_whose_client_goes_away_leaves_no_watcher(server: Server) -> None:
    async with service_connect.TuteServiceClient(f"http://127.0.0.1:{server.http_port}") as client:
        created = await client.create_table(
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(preset="corriente-6"), take_seat=True, display_name="Ana"
            )
        )
    # A page's stream, on a connection of its own, dropped as a closed tab drops it.
    body = json.dumps({"tableId": created.table_id}).encode()
    envelope = b"\x00" + len(body).to_bytes(4, "big") + body
    reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
    writer.write(
        (
            "\r\n".join(
                [
                    "POST /tute.v1.TuteService/WatchTable HTTP/1.1",
                    "Host: 127.0.0.1",
                    "Content-Type: application/connect+json",
                    "Connect-Protocol-Version: 1",
                    f"Content-Length: {len(envelope)}",
                ]
            )
            + "\r\n\r\n"
        ).encode()
        + envelope
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"snapshot" in await reader.read(4096)
    gauge = server.metrics.watch_streams
    assert gauge._value.get() == 1
    writer.close()
    await writer.wait_closed()
    await eventually(lambda: gauge._value.get() == 0, timeout=10)


async def test_streams_end_unavailable_when_the_server_stops() -> None:
    srv = await create_server(WEB)
    stopped = False
    try:
        async with service_connect.TuteServiceClient(
            f"http://127.0.0.1:{srv.http_port}", protocol=ProtocolType.GRPC_WEB
        ) as client:
            created = await client.create_table(
                service_pb2.CreateTableRequest(
                    rules=rules_pb2.Rules(preset="corriente-6"), take_seat=True, display_name="Ana"
                )
            )
            stream = client.watch_table(
                service_pb2.WatchTableRequest(table_id=created.table_id),
                headers=bearer(created.seat_token),
            )
            assert (await anext(stream)).WhichOneof("kind") == "snapshot"
            shutdown = asyncio.create_task(srv.shutdown())
            with pytest.raises(ConnectError) as caught:
                await anext(stream)
            assert caught.value.code.name == "UNAVAILABLE"
            assert reason_of(caught.value) == "SHUTTING_DOWN"
            await shutdown
            stopped = True
    finally:
        if not stopped:
            await srv.shutdown()


async def test_the_web_clients_files_are_served_on_the_same_port(tmp_path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>tute</title>")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "app.js").write_text("console.log(1)")
    (tmp_path.parent / "secret.txt").write_text("not for the web")
    srv = await create_server(dataclasses.replace(WEB, web_dir=str(tmp_path)))
    try:

        def get(path: str) -> bytes:
            return f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()

        status, headers, body = await _http(srv.http_port, get("/"))
        assert status.split()[1] == "200" and b"<title>tute</title>" in body
        assert headers["content-type"].startswith("text/html")
        status, headers, body = await _http(srv.http_port, get("/assets/app.js"))
        assert body == b"console.log(1)" and "javascript" in headers["content-type"]
        # a route of the single-page client, and a path that climbs out: index.html
        for path in ("/t/0123456789abcdef", "/../secret.txt", "/assets/../../secret.txt"):
            status, _, body = await _http(srv.http_port, get(path))
            assert status.split()[1] == "200" and b"<title>tute</title>" in body, path
    finally:
        await srv.shutdown()


async def test_per_caller_limits_count_the_browsers_address() -> None:
    """The HTTP port names the caller by the client's address, as the gRPC port does: the
    same bucket, the same RESOURCE_EXHAUSTED RATE_LIMITED with a RetryInfo."""
    srv = await create_server(dataclasses.replace(WEB, create_rate_per_s=0.001, create_burst=2))
    try:
        async with service_connect.TuteServiceClient(f"http://127.0.0.1:{srv.http_port}") as client:
            request = service_pb2.CreateTableRequest(rules=rules_pb2.Rules(preset="tres"))
            for _ in range(2):
                await client.create_table(request)
            with pytest.raises(ConnectError) as caught:
                await client.create_table(request)
        assert caught.value.code.name == "RESOURCE_EXHAUSTED"
        assert reason_of(caught.value) == "RATE_LIMITED"
        retry = [d for d in caught.value.details if d.type_name == "google.rpc.RetryInfo"]
        delay = error_details_pb2.RetryInfo.FromString(retry[0].message_bytes).retry_delay
        assert delay.seconds > 0
    finally:
        await srv.shutdown()


async def test_connections_to_the_http_port_send_without_nagle() -> None:
    """An accepted connection has TCP_NODELAY, so an answer's head and body leave at once
    instead of the body waiting for the client's delayed acknowledgement of the head."""
    sock = bind("127.0.0.1", 0)
    accepted: asyncio.Queue[int] = asyncio.Queue()

    async def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        await accepted.put(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connect, sock=sock)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        assert await asyncio.wait_for(accepted.get(), 10) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
