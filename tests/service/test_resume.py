"""WatchTable resume: a watcher that lost its stream reconnects with the last sequence number it
handled (``resume_after``) and receives exactly the events it missed (no gap, no duplicate, no
snapshot), then the live ones; the result is byte for byte what an uninterrupted watcher of the
same audience received.
"""

from __future__ import annotations

import asyncio
import random

import grpc
import pytest

from service.server import Server
from tute.v1 import rules_pb2, service_pb2, table_pb2

from .helpers import Stub, auth, bad_request_fields, table_with_humans

FINISHED = table_pb2.TABLE_STATUS_FINISHED


class Stream:
    """A WatchTable call read message by message."""

    def __init__(
        self, stub: Stub, table_id: str, token: str | None = None, resume_after: int | None = None
    ) -> None:
        req = service_pb2.WatchTableRequest(table_id=table_id)
        if resume_after is not None:
            req.resume_after = resume_after
        self.call = stub.WatchTable(req, metadata=auth(token) if token else None)
        self.messages: list[service_pb2.WatchTableResponse] = []
        self.last_seq = resume_after if resume_after is not None else -1

    async def read(self, timeout: float = 10.0) -> service_pb2.WatchTableResponse:
        msg = await asyncio.wait_for(self.call.read(), timeout)
        assert msg is not grpc.aio.EOF, "the stream ended"  # type: ignore[attr-defined]
        self.messages.append(msg)
        if msg.HasField("snapshot"):
            self.last_seq = msg.snapshot.last_event_sequence
        else:
            assert msg.event.sequence == self.last_seq + 1, (
                f"event {msg.event.sequence} after {self.last_seq}: gap or duplicate"
            )
            self.last_seq = msg.event.sequence
        return msg

    async def read_until(self, seq: int) -> None:
        while self.last_seq < seq:
            await self.read()

    def events(self) -> list[bytes]:
        return [m.event.SerializeToString() for m in self.messages if m.HasField("event")]

    def close(self) -> None:
        self.call.cancel()


async def last_seq(stub: Stub, table_id: str) -> int:
    view = (await stub.GetTable(service_pb2.GetTableRequest(table_id=table_id))).view
    return view.last_event_sequence


async def act(
    stub: Stub, table_id: str, tokens: dict[int, str], rng: random.Random, steps: int
) -> list[service_pb2.SubmitActionResponse]:
    """The test players make ``steps`` random legal moves (fewer if the match ends)."""
    out: list[service_pb2.SubmitActionResponse] = []
    for _ in range(steps):
        for token in tokens.values():
            view = (
                await stub.GetTable(
                    service_pb2.GetTableRequest(table_id=table_id), metadata=auth(token)
                )
            ).view
            if view.status == FINISHED:
                return out
            if view.legal_actions:
                out.append(
                    await stub.SubmitAction(
                        service_pb2.SubmitActionRequest(
                            table_id=table_id, action=rng.choice(list(view.legal_actions))
                        ),
                        metadata=auth(token),
                    )
                )
                break
        else:
            await asyncio.sleep(0.01)  # bots (server side) are on turn
    return out


def group_starts(stream: Stream) -> dict[int, int]:
    """Sequence number -> index of the event within its change (0: first event of a version)."""
    out: dict[int, int] = {}
    version, index = -1, 0
    for m in stream.messages:
        if m.HasField("event"):
            if m.event.table_version != version:
                version, index = m.event.table_version, 0
            else:
                index += 1
            out[m.event.sequence] = index
    return out


@pytest.mark.parametrize(
    ("preset", "audience"),
    [("corriente-6", 1), ("parejas", None), ("tres", 0), ("parejas-manos", 3)],
)
async def test_reconnect_gets_exactly_the_missed_events_then_live_ones(
    stub: Stub, preset: str, audience: int | None
) -> None:
    rng = random.Random(f"{preset}/{audience}")
    # The deals are the server's fair deals, so they change from run to run: no tute, which
    # could end the match (and the cuts) early; the targets are high for the same reason.
    seated = await table_with_humans(
        stub, preset, turn_time_s=0, target_points=500, target_match_points=5, tute_enabled=False
    )
    tid = seated.table_id
    token = seated.tokens[audience] if audience is not None else None
    reference = Stream(stub, tid, token)
    watcher = Stream(stub, tid, token)
    await reference.read()
    first = await watcher.read()
    assert first.HasField("snapshot")
    received = watcher.events()

    cuts = 0
    mid_change_cuts = 0
    for cycle in range(6):
        await act(stub, tid, seated.tokens, rng, rng.randrange(2, 12))
        await reference.read_until(await last_seq(stub, tid))
        # cut the watcher somewhere in what it has not read yet: at a change boundary or in
        # the middle of a change (after the first of several events of one version)
        starts = group_starts(reference)
        pending = [s for s in starts if s > watcher.last_seq]
        if not pending:
            continue
        if cycle % 2:
            mid = [s for s in pending if starts.get(s + 1, 0) > 0]
            cut = rng.choice(mid) if mid else rng.choice(pending)
        else:
            cut = rng.choice(pending)
        mid_change_cuts += starts.get(cut + 1, 0) > 0
        await watcher.read_until(cut)
        assert watcher.last_seq == cut
        received += watcher.events()
        watcher.close()
        cuts += 1
        # events happen while it is away
        await act(stub, tid, seated.tokens, rng, rng.randrange(1, 6))
        watcher = Stream(stub, tid, token, resume_after=cut)
        msg = await watcher.read()
        assert msg.HasField("event"), "a resumed stream starts with the next event, no snapshot"
        assert msg.event.sequence == cut + 1
    # and live events after the last reconnection
    await act(stub, tid, seated.tokens, rng, 5)
    final = await last_seq(stub, tid)
    await reference.read_until(final)
    await watcher.read_until(final)
    received += watcher.events()
    watcher.close()
    reference.close()
    assert cuts >= 4 and mid_change_cuts >= 1
    assert received == reference.events(), "missed + live events differ from an unbroken stream"


async def test_resume_with_missed_events_made_by_bots(stub: Stub) -> None:
    """Events the scheduler commits (bot moves) while the watcher is away are replayed too."""
    rng = random.Random(7)
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(
                preset="parejas", options=rules_pb2.RuleOptions(turn_time_s=0, target_points=500)
            ),
            take_seat=True,
            display_name="ana",
        )
    )
    tid, token = created.table_id, created.seat_token
    reference = Stream(stub, tid)
    await reference.read()

    async def human_moves(k: int) -> None:
        """The human plays ``k`` times, each time once the bots have brought the turn back."""
        for _ in range(k):
            for _ in range(500):
                view = (
                    await stub.GetTable(
                        service_pb2.GetTableRequest(table_id=tid), metadata=auth(token)
                    )
                ).view
                assert view.status != FINISHED
                if view.legal_actions:
                    break
                await asyncio.sleep(0.01)
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=tid, action=rng.choice(list(view.legal_actions))
                ),
                metadata=auth(token),
            )

    for _ in range(3):
        await stub.AddBot(service_pb2.AddBotRequest(table_id=tid), metadata=auth(token))
    watcher = Stream(stub, tid)
    await watcher.read()
    skip = watcher.last_seq - reference.last_seq  # events the reference saw before it began
    received: list[bytes] = []
    for _ in range(3):
        await human_moves(1)
        cut = await last_seq(stub, tid)
        await watcher.read_until(cut)
        received += watcher.events()
        watcher.close()
        await human_moves(2)  # the bots answer in between, while the watcher is away
        assert await last_seq(stub, tid) > cut + 4
        watcher = Stream(stub, tid, resume_after=cut)
        assert (await watcher.read()).event.sequence == cut + 1
    await human_moves(2)
    final = await last_seq(stub, tid)
    await reference.read_until(final)
    await watcher.read_until(final)
    received += watcher.events()
    watcher.close()
    reference.close()
    assert received == reference.events()[skip:]


async def test_resume_at_the_last_sequence_gives_only_live_events(stub: Stub) -> None:
    seated = await table_with_humans(stub, "corriente-6", turn_time_s=0)
    tid = seated.table_id
    await act(stub, tid, seated.tokens, random.Random(1), 3)
    last = await last_seq(stub, tid)
    for seat, token in seated.tokens.items():
        stream = Stream(stub, tid, token, resume_after=last)
        # Nothing is sent before something happens (no snapshot, no replay): the first
        # message read after the move below must be the move's own first event.
        pending = asyncio.ensure_future(stream.call.read())
        view = (
            await stub.GetTable(service_pb2.GetTableRequest(table_id=tid), metadata=auth(token))
        ).view
        actor = seat if view.legal_actions else 1 - seat
        resp = await stub.SubmitAction(
            service_pb2.SubmitActionRequest(
                table_id=tid,
                action=(
                    await stub.GetTable(
                        service_pb2.GetTableRequest(table_id=tid),
                        metadata=auth(seated.tokens[actor]),
                    )
                ).view.legal_actions[0],
            ),
            metadata=auth(seated.tokens[actor]),
        )
        first = await asyncio.wait_for(pending, 5)
        assert first.HasField("event") and first.event.sequence == last + 1
        stream.messages.append(first)
        stream.last_seq = last + 1
        new_last = await last_seq(stub, tid)
        await stream.read_until(new_last)
        stream.close()
        got = stream.events()
        assert len(got) == new_last - last
        if actor == seat:  # the actor's stream shows the events as its response did
            assert got == [e.SerializeToString() for e in resp.events]
        last = new_last


async def test_resume_after_zero_replays_every_event(stub: Stub) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="tres", options=rules_pb2.RuleOptions(turn_time_s=0))
        )
    )
    tid = created.table_id
    reference = Stream(stub, tid)
    snap = await reference.read()
    assert snap.snapshot.last_event_sequence == 0
    tokens = {}
    for i in range(3):
        joined = await stub.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, display_name=f"p{i}")
        )
        tokens[joined.seat] = joined.seat_token
    await act(stub, tid, tokens, random.Random(3), 8)
    last = await last_seq(stub, tid)
    replay = Stream(stub, tid, resume_after=0)
    await replay.read_until(last)
    await reference.read_until(last)
    assert replay.events() == reference.events()
    assert [m.HasField("event") for m in replay.messages] == [True] * last
    await act(stub, tid, tokens, random.Random(4), 2)
    last = await last_seq(stub, tid)
    await replay.read_until(last)
    await reference.read_until(last)
    assert replay.events() == reference.events()
    replay.close()
    reference.close()


async def test_resume_after_the_match_ended(stub: Stub, server: Server) -> None:
    """A finished table still replays what a watcher missed, and the stream stays open: it
    ends only when the server stops, with UNAVAILABLE (a stream the server had closed after
    the match's end would read its end, status OK)."""
    seated = await table_with_humans(stub, "corriente-6", turn_time_s=0, target_points=1)
    tid = seated.table_id
    watcher = Stream(stub, tid)
    await watcher.read()
    cut = watcher.last_seq
    await act(stub, tid, seated.tokens, random.Random(5), 1000)
    view = (await stub.GetTable(service_pb2.GetTableRequest(table_id=tid))).view
    assert view.status == FINISHED
    watcher.close()
    resumed = Stream(stub, tid, resume_after=cut)
    await resumed.read_until(view.last_event_sequence)
    kinds = [m.event.WhichOneof("kind") for m in resumed.messages]
    assert kinds[-1] == "match_ended"
    server.app.begin_shutdown()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await resumed.read()
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    resumed.close()


@pytest.mark.parametrize("beyond", [1, 1000, 2**64 - 1])
async def test_resume_beyond_the_last_event_is_invalid(stub: Stub, beyond: int) -> None:
    seated = await table_with_humans(stub, "corriente-6", turn_time_s=0)
    last = await last_seq(stub, seated.table_id)
    after = min(last + beyond, 2**64 - 1)
    call = stub.WatchTable(
        service_pb2.WatchTableRequest(table_id=seated.table_id, resume_after=after)
    )
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call.read()
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_request_fields(err.value) == ["resume_after"]


async def test_reconnecting_again_and_again_while_bots_play(stub: Stub) -> None:
    """Four bots play as fast as the server lets them while a watcher drops its stream every
    few events and resumes at once: the commits racing each reconnection lose nothing."""
    rng = random.Random(11)
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(
                preset="parejas-manos", options=rules_pb2.RuleOptions(target_match_points=2)
            )
        )
    )
    tid = created.table_id
    reference = Stream(stub, tid)
    await reference.read()
    watcher = Stream(stub, tid)
    await watcher.read()
    for _ in range(4):
        await stub.AddBot(
            service_pb2.AddBotRequest(table_id=tid), metadata=auth(created.owner_token)
        )
    received: list[bytes] = []
    reconnections = 0
    ended = False
    while not ended:
        for _ in range(rng.randrange(1, 6)):  # a match has far more than 60 messages
            msg = await watcher.read()
            if msg.event.HasField("match_ended"):
                ended = True
                break
        received += watcher.events()
        watcher.close()
        watcher = Stream(stub, tid, resume_after=watcher.last_seq)
        reconnections += 1
    watcher.close()
    await reference.read_until(await last_seq(stub, tid))
    reference.close()
    assert reconnections > 10
    assert received == reference.events()
