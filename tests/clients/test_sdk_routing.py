"""The SDK names the table of every call about one (``tute-table-id``), which a proxy in front of
several servers hashes on (deploy/envoy). Here a recording proxy on loopback forwards every
call, as bytes, to a real server, and a whole match is played through it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import grpc
import pytest

from clients import TuteClient
from clients.errors import FailedPrecondition
from clients.sdk import TABLE_HEADER
from service.server import Server

from .helpers import SHORT_4P

STREAMING = {"WatchTable": "unary_stream", "WatchTicket": "unary_stream", "PlayTable": "stream"}
"""Methods of TuteService that are not unary-unary (the rest are)."""

TABLE_CALLS = {
    "JoinTable",
    "AddBot",
    "GetTable",
    "SubmitAction",
    "WatchTable",
    "LeaveTable",
    "GetMatchRecord",
}
"""The calls about one table that the SDK makes in this test."""


class RecordingProxy(grpc.GenericRpcHandler):
    """Forwards each call to ``channel`` with its metadata, and records (method, metadata)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.seen: list[tuple[str, dict[str, str]]] = []

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = details.method
        md = {k: v for k, v in details.invocation_metadata if isinstance(v, str)}
        self.seen.append((method.rsplit("/", 1)[-1], md))
        pairs = tuple(md.items())
        kind = STREAMING.get(method.rsplit("/", 1)[-1], "unary")

        async def unary(request: bytes, ctx: grpc.aio.ServicerContext) -> bytes:
            try:
                reply: bytes = await self.channel.unary_unary(method, None, None)(
                    request, metadata=pairs
                )
            except grpc.aio.AioRpcError as exc:
                await ctx.abort(exc.code(), exc.details() or "")
            return reply

        async def stream(request: bytes, ctx: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            call = self.channel.unary_stream(method, None, None)(request, metadata=pairs)
            try:
                async for msg in call:
                    yield msg
            except grpc.aio.AioRpcError as exc:
                await ctx.abort(exc.code(), exc.details() or "")

        if kind == "unary":
            return grpc.unary_unary_rpc_method_handler(unary)
        if kind == "unary_stream":
            return grpc.unary_stream_rpc_method_handler(stream)
        return None  # PlayTable: not used here


@pytest.fixture
async def proxy(server: Server) -> AsyncIterator[tuple[str, RecordingProxy]]:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    handler = RecordingProxy(channel)
    front = grpc.aio.server()
    front.add_generic_rpc_handlers((handler,))
    port = front.add_insecure_port("127.0.0.1:0")
    await front.start()
    try:
        yield f"127.0.0.1:{port}", handler
    finally:
        await front.stop(None)
        await channel.close(None)


async def test_every_call_about_a_table_names_it(proxy: tuple[str, RecordingProxy]) -> None:
    address, recorder = proxy
    rng = random.Random(3)
    owner = TuteClient(address)
    players = [owner, TuteClient(address)]
    try:
        created = await owner.create_table(
            preset="parejas", options=SHORT_4P, take_seat=True, display_name="p0"
        )
        table_id = created.table_id
        await players[1].join_table(table_id=table_id, display_name="p1")
        await owner.add_bot(table_id=table_id, level="random")
        await owner.add_bot(table_id=table_id, level="random")

        async def play(client: TuteClient) -> None:
            async for update in client.watch(table_id):
                table = update.table
                if table.finished:
                    return
                if table.legal_actions:
                    await client.get_table(table_id=table_id)
                    await client.submit(
                        table_id=table_id, action=rng.choice(list(table.legal_actions))
                    )

        async with asyncio.timeout(60):
            await asyncio.gather(*(play(c) for c in players))
        record = await owner.get_match_record(table_id=table_id)
        assert record.table_id == table_id
        with pytest.raises(FailedPrecondition, match="over"):  # the call went through, named
            await players[1].leave_table(table_id=table_id)
    finally:
        for c in players:
            await c.close()

    methods = {m for m, _ in recorder.seen}
    assert methods >= TABLE_CALLS | {"CreateTable"}, TABLE_CALLS - methods
    for method, md in recorder.seen:
        if method in TABLE_CALLS:
            assert md.get(TABLE_HEADER) == table_id, (method, md)
        else:  # CreateTable: no table yet
            assert TABLE_HEADER not in md, (method, md)
    # the seat token still travels beside it
    submits = [md for m, md in recorder.seen if m == "SubmitAction"]
    assert submits and all(md["authorization"].startswith("Bearer ") for md in submits)


def test_the_header_is_what_the_proxy_and_the_browser_client_send() -> None:
    """deploy/envoy hashes on the SDK's header and lets browsers send it; the web client
    sends the same name, and the server's own HTTP port allows it too."""
    from pathlib import Path

    from service.web import CORS_ALLOW_HEADERS

    repo = Path(__file__).resolve().parents[2]
    envoy = (repo / "deploy/envoy/envoy.yaml").read_text()
    assert f"header: {{ header_name: {TABLE_HEADER} }}" in envoy
    assert "lb_policy: RING_HASH" in envoy
    allowed = next(line for line in envoy.splitlines() if "allow_headers:" in line)
    assert TABLE_HEADER in allowed
    assert TABLE_HEADER in {h.strip() for h in CORS_ALLOW_HEADERS.split(",")}
    api = (repo / "clients/web/src/api.ts").read_text()
    assert f'export const TABLE_HEADER = "{TABLE_HEADER}";' in api
