"""Fair deals and match records through the API, on a real server.

Every hand's HandDealt carries the commitment, its end the seed; the packs the seats were
dealt (rebuilt from their own streams) are the committed shuffles; GetMatchRecord's record
verifies and replays (with the engine, in the client's code) to the events every watcher
saw; no seed shows in any message before its hand's end; the record outlives the table.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

import engine
from clients.records import check, record_from_proto
from engine.events import CardPlayed
from engine.shuffle import commitment, shuffle
from service.server import create_server
from tests.durable.conftest import fresh_postgres_url
from tests.durable.conftest import postgres as postgres  # noqa: PLC0414 - the real PostgreSQL fixture, re-exported
from tute.v1 import event_pb2, rules_pb2, service_pb2, service_pb2_grpc

from .conftest import FAST
from .helpers import FINISHED, Seated, Stub, auth, error_info, view_of
from .matchplay import Watcher, card, kind, play_match

SHORT = {  # options that keep each preset's match short
    "parejas": {"target_points": 1},
    "corriente-6": {"target_points": 1},
    "corriente-juegos": {"target_match_points": 1},
    "parejas-manos": {"target_match_points": 1},
    "tres": {"target_match_points": 1},
    "corriente-8": {"target_match_points": 1},
    "parejas-mejor-de-3": {"target_match_points": 1},
}


async def _seated(stub: Stub, preset: str, client_seeds: dict[int, str], **options: Any) -> Seated:
    """A table of ``preset`` (a short match unless ``options`` say otherwise), every seat a
    test player, with these client seeds."""
    rule_options = rules_pb2.RuleOptions(turn_time_s=0, **(options or SHORT.get(preset, {})))
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset=preset, options=rule_options),
            take_seat=True,
            display_name="p0",
            client_seed=client_seeds.get(0, ""),
        )
    )
    tokens = {created.seat: created.seat_token}
    for i in range(1, len(created.table.seats)):
        joined = await stub.JoinTable(
            service_pb2.JoinTableRequest(
                table_id=created.table_id, display_name=f"p{i}", client_seed=client_seeds.get(i, "")
            )
        )
        tokens[joined.seat] = joined.seat_token
    return Seated(created.table_id, tokens)


def _assert_dealt_from(
    rules: engine.Rules,
    pack: tuple[int, ...],
    hand_no: int,
    seat_events: dict[int, list[event_pb2.Event]],
) -> None:
    """Each seat's dealt hand, the trump card and (2p) every card drawn, in order, are those
    the pack deals (RULES.md §3: one card at a time from the dealer's right)."""
    n = rules.players
    dealt = 2 * rules.hand_size if n == 2 else len(pack)
    draws: dict[int, int] = {}
    for seat, events in seat_events.items():
        in_hand = False
        for ev in events:
            k = kind(ev)
            if k == "hand_dealt":
                in_hand = ev.hand_dealt.hand_number == hand_no
                if in_hand:
                    hd = ev.hand_dealt
                    mine = {pack[i] for i in range(dealt) if (hd.dealer + 1 + i) % n == seat}
                    assert {card(c) for c in hd.hand} == mine
                    assert card(hd.trump_card) == (pack[dealt] if n == 2 else pack[-1])
            elif (
                in_hand
                and k == "card_drawn"
                and ev.card_drawn.HasField("card")
                and not ev.card_drawn.turned_card
            ):  # (an exchange may have changed that one)
                draws[ev.sequence] = card(ev.card_drawn.card)
    if n == 2:
        drawn = [draws[q] for q in sorted(draws)]
        assert drawn == list(pack[dealt + 1 : dealt + 1 + len(drawn)])


async def _record(stub: Stub, table_id: str):
    resp = await stub.GetMatchRecord(service_pb2.GetMatchRecordRequest(table_id=table_id))
    return resp.record


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
async def test_a_match_record_verifies_and_matches_what_was_dealt_and_played(
    stub: Stub, preset: str
) -> None:
    rng = random.Random(preset)
    rules = engine.Rules.preset(preset)
    seeds = {0: f"{preset}-zero", 2 % rules.players: "ñandú 🂡"}
    seated = await _seated(stub, preset, seeds)
    tid = seated.table_id
    watchers = {s: Watcher(stub, tid, t, resume_after=0) for s, t in seated.tokens.items()}
    spectator = Watcher(stub, tid, None, resume_after=0)
    try:
        await play_match(stub, seated, rng, prefer_declarations=preset == "parejas")
        final = await view_of(stub, tid, None)
        for w in (*watchers.values(), spectator):
            await w.wait_for_seq(final.last_event_sequence)
    finally:
        for w in (*watchers.values(), spectator):
            await w.close()
    msg = await _record(stub, tid)
    record = record_from_proto(msg)
    steps, _ = check(record)  # every deal against its commitment, the replay to its results

    events = spectator.events
    assert [s.seat for s in record.seats] == list(range(rules.players))
    assert all(s.kind == "player" for s in record.seats)
    started = next(e.match_started for e in events if kind(e) == "match_started")
    expected_seeds = [seeds.get(s, "") for s in range(rules.players)]
    assert list(started.client_seeds) == expected_seeds
    dealt = [e.hand_dealt for e in events if kind(e) == "hand_dealt"]
    assert [d.hand_number for d in dealt] == [h.hand_no for h in record.hands]
    reveals = {
        e.hand_scored.deal.hand_number: e.hand_scored.deal
        for e in events
        if kind(e) == "hand_scored"
    }
    ended = next(e.match_ended for e in events if kind(e) == "match_ended")
    if ended.HasField("unfinished_deal"):
        reveals[ended.unfinished_deal.hand_number] = ended.unfinished_deal
    for d, h in zip(dealt, record.hands, strict=True):
        assert d.shuffle_algorithm == "tute-shuffle-v1"
        assert d.deal_commitment == h.commitment == commitment(bytes.fromhex(h.server_seed)).hex()
        reveal = reveals[h.hand_no]
        assert reveal.server_seed == h.server_seed and reveal.commitment == h.commitment
        assert list(reveal.client_seeds) == expected_seeds == list(h.client_seeds)
    # What each seat was dealt and drew (from its own stream) is the committed shuffle's deal.
    for h in record.hands:
        pack = shuffle(bytes.fromhex(h.server_seed), h.client_seeds, h.hand_no, rules)
        _assert_dealt_from(rules, pack, h.hand_no, {s: w.events for s, w in watchers.items()})
    # The replay plays the cards every watcher saw, and ends as the match did.
    played = [
        (e.card_played.seat, card(e.card_played.card)) for e in events if kind(e) == "card_played"
    ]
    replayed = [(e.seat, e.card) for s in steps for e in s.events if isinstance(e, CardPlayed)]
    assert replayed == played
    assert list(ended.result.winner_sides) == list(record.results.winners)
    assert steps[-1].state.over


async def test_no_seed_shows_before_its_hand_ends(
    stub: Stub, capfd: pytest.CaptureFixture[str]
) -> None:
    """Every message every seat and a spectator received: a hand's seed (hex or raw bytes)
    only after the event that ends the hand; in the server's log lines, never."""
    seated = await _seated(stub, "corriente-8", {0: "a", 1: "b"}, target_match_points=3)
    tid = seated.table_id
    watchers = [Watcher(stub, tid, t, resume_after=0) for t in seated.tokens.values()]
    watchers.append(Watcher(stub, tid, None, resume_after=0))
    try:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _record(stub, tid)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        info = error_info(err.value)
        assert info is not None and info.reason == "MATCH_NOT_OVER"
        await play_match(stub, seated, random.Random(3))
        final = await view_of(stub, tid, None)
        for w in watchers:
            await w.wait_for_seq(final.last_event_sequence)
    finally:
        for w in watchers:
            await w.close()
    record = record_from_proto(await _record(stub, tid))
    assert len(record.hands) >= 2
    for w in watchers:
        for h in record.hands:
            seed_hex = h.server_seed.encode()
            seed_raw = bytes.fromhex(h.server_seed)
            revealed = False
            for ev in w.events:
                if kind(ev) == "hand_scored" and ev.hand_scored.result.hand_number == h.hand_no:
                    assert ev.hand_scored.deal.server_seed == h.server_seed
                    revealed = True
                if kind(ev) == "match_ended":
                    revealed = True
                if not revealed:
                    data = ev.SerializeToString()
                    assert seed_hex not in data and seed_raw not in data, (h.hand_no, kind(ev))
            assert revealed
    for snapshot in (s for w in watchers for s in w.snapshots):
        data = snapshot.SerializeToString()
        assert all(bytes.fromhex(h.server_seed) not in data for h in record.hands)
    logged = "".join(capfd.readouterr())
    assert "GetMatchRecord" in logged  # the server's log lines are there to look at
    assert all(h.server_seed not in logged for h in record.hands)


async def test_get_match_record_errors(stub: Stub) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(preset="corriente-6"), take_seat=True, display_name="p0"
        )
    )
    cases = [
        (created.table_id, grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_OVER"),
        ("no-such-table", grpc.StatusCode.NOT_FOUND, "TABLE_NOT_FOUND"),
        ("", grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    ]
    for table_id, code, reason in cases:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _record(stub, table_id)
        assert err.value.code() == code
        info = error_info(err.value)
        assert info is not None and info.reason == reason


@pytest.mark.parametrize(
    ("seed", "take_seat"),
    [("x" * 65, True), ("ñ" * 33, True), ("a\nb", True), ("\x00", True), ("ok", False)],
)
async def test_a_bad_client_seed_is_invalid(stub: Stub, seed: str, take_seat: bool) -> None:
    req = service_pb2.CreateTableRequest(
        rules=rules_pb2.Rules(preset="corriente-6"), take_seat=take_seat, client_seed=seed
    )
    if take_seat:
        req.display_name = "p0"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.CreateTable(req)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    from .helpers import bad_request_fields

    assert bad_request_fields(err.value) == ["client_seed"]
    if take_seat:
        created = await stub.CreateTable(
            service_pb2.CreateTableRequest(
                rules=rules_pb2.Rules(preset="corriente-6"), take_seat=True, display_name="p0"
            )
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.JoinTable(
                service_pb2.JoinTableRequest(
                    table_id=created.table_id, display_name="p1", client_seed=seed
                )
            )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert bad_request_fields(err.value) == ["client_seed"]


async def test_bots_and_timeouts_are_recorded_as_theirs(stub: Stub) -> None:
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(
            rules=rules_pb2.Rules(
                preset="corriente-6", options=rules_pb2.RuleOptions(target_points=1, turn_time_s=0)
            ),
            take_seat=True,
            display_name="Ana",
            client_seed="ana",
        )
    )
    tid = created.table_id
    await stub.AddBot(
        service_pb2.AddBotRequest(table_id=tid, level="easy"), metadata=auth(created.seat_token)
    )
    seated = Seated(tid, {created.seat: created.seat_token})
    rng = random.Random(5)
    view = await view_of(stub, tid, created.seat_token)
    while view.status != FINISHED:
        if view.legal_actions:
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=tid, action=rng.choice(list(view.legal_actions))
                ),
                metadata=auth(created.seat_token),
            )
        w = Watcher(stub, tid, None)
        await w.wait_until(lambda w: bool(w.snapshots))
        await w.close()
        view = await view_of(stub, tid, created.seat_token)
    record = record_from_proto(await _record(stub, tid))
    check(record)
    assert record.seats[1].kind == "bot" and record.seats[1].level == "easy"
    assert {a.by for a in record.actions if a.seat == 1} == {"bot"}
    assert {a.by for a in record.actions if a.seat == 0} <= {"player"}
    assert record.hands[0].client_seeds == ("ana", "")
    del seated


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_the_record_outlives_the_table(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """A finished match's record is read back from the history (a SQLite file, or a real
    PostgreSQL) by a server whose table store never held the table."""
    if backend == "sqlite":
        url = f"sqlite://{tmp_path / 'history.db'}"
    else:
        url = await fresh_postgres_url(request.getfixturevalue("postgres"))
    settings = dataclasses.replace(FAST, history=url)
    first = await create_server(settings)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{first.port}") as ch:
            stub = service_pb2_grpc.TuteServiceStub(ch)
            seated = await _seated(stub, "corriente-6", {1: "bea"})
            await play_match(stub, seated, random.Random(8))
            kept = await _record(stub, seated.table_id)
    finally:
        await first.shutdown()
    second = await create_server(settings)  # a fresh memory store: the table is not in it
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{second.port}") as ch:
            stub = service_pb2_grpc.TuteServiceStub(ch)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await view_of(stub, seated.table_id, None)
            assert err.value.code() == grpc.StatusCode.NOT_FOUND
            assert await _record(stub, seated.table_id) == kept
            # tute verify --table, as a process against this server
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "clients",
                "--server",
                f"127.0.0.1:{second.port}",
                "verify",
                "--table",
                seated.table_id,
                "--save",
                str(tmp_path / "r.json"),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, errs = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, errs.decode()
            assert out.decode().splitlines()[-1] == "verified"
            assert (tmp_path / "r.json").exists()
    finally:
        await second.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
async def test_many_matches_of_every_preset_verify_and_replay(stub: Stub, preset: str) -> None:
    """The issue's 200 random matches per preset (``TUTE_RECORD_MATCHES`` sets how many):
    each record verifies and replays to the cards and result a spectator saw."""
    count = int(os.environ.get("TUTE_RECORD_MATCHES", "200"))
    rng = random.Random(f"many/{preset}")
    for i in range(count):
        seated = await _seated(stub, preset, {0: f"m{i}"})
        spectator = Watcher(stub, seated.table_id, None, resume_after=0)
        try:
            await play_match(stub, seated, rng)
            final = await view_of(stub, seated.table_id, None)
            await spectator.wait_for_seq(final.last_event_sequence)
        finally:
            await spectator.close()
        record = record_from_proto(await _record(stub, seated.table_id))
        steps, _ = check(record)
        played = [
            (e.card_played.seat, card(e.card_played.card))
            for e in spectator.events
            if kind(e) == "card_played"
        ]
        assert [
            (e.seat, e.card) for s in steps for e in s.events if isinstance(e, CardPlayed)
        ] == played
        ended = next(e.match_ended for e in spectator.events if kind(e) == "match_ended")
        assert list(ended.result.winner_sides) == list(record.results.winners)


async def test_retention_drops_old_casual_records_at_start(tmp_path: Path) -> None:
    from service.durable import open_history
    from tests.engine.test_record import play_recorded

    url = f"sqlite://{tmp_path / 'history.db'}"
    history = open_history(url)
    await history.start()
    made, _ = play_recorded("corriente-6", random.Random(4))
    now_ms = round(time.time() * 1000)
    await history.put_record(made._replace(table_id="old"), finished_at_ms=now_ms - 40 * 86_400_000)
    await history.put_record(made._replace(table_id="new"), finished_at_ms=now_ms - 86_400_000)
    await history.close()
    settings = dataclasses.replace(FAST, history=url, history_casual_days=30)
    server = await create_server(settings)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as ch:
            stub = service_pb2_grpc.TuteServiceStub(ch)
            assert record_from_proto(await _record(stub, "new")) == made._replace(table_id="new")
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await _record(stub, "old")
            assert err.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        await server.shutdown()


@pytest.mark.parametrize("preset", ["corriente-6", "parejas"])
async def test_the_replay_steps_are_the_engines_rerun_of_the_record(
    stub: Stub, preset: str
) -> None:
    """GetMatchRecord with include_replay: one step for the opening deal, then one per record
    action, whose events are what the spectator saw (every draw with its card, the deals with
    the record's commitments); without it, no steps."""
    rng = random.Random(f"replay/{preset}")
    seated = await _seated(stub, preset, {0: "replay"})
    spectator = Watcher(stub, seated.table_id, None, resume_after=0)
    try:
        await play_match(stub, seated, rng, prefer_declarations=True)
        final = await view_of(stub, seated.table_id, None)
        await spectator.wait_for_seq(final.last_event_sequence)
    finally:
        await spectator.close()
    plain = await stub.GetMatchRecord(service_pb2.GetMatchRecordRequest(table_id=seated.table_id))
    assert not plain.replay
    resp = await stub.GetMatchRecord(
        service_pb2.GetMatchRecordRequest(table_id=seated.table_id, include_replay=True)
    )
    assert resp.record == plain.record
    steps = list(resp.replay)
    assert [s.action_index for s in steps] == list(range(-1, len(resp.record.actions)))
    replayed = [e for s in steps for e in s.events]
    game_kinds = {"card_played", "trick_taken", "cante_sung", "tute_declared", "trump_exchanged"}
    game_kinds |= {"hand_scored", "game_ended", "match_ended", "player_forfeited"}

    def bare(e: event_pb2.Event) -> event_pb2.Event:
        out = event_pb2.Event()
        out.CopyFrom(e)
        out.ClearField("sequence")
        out.ClearField("table_version")
        out.ClearField("time")
        if kind(out) == "hand_scored":
            out.hand_scored.ClearField("deal")  # the record carries the reveal
        if kind(out) == "match_ended":
            out.match_ended.ClearField("unfinished_deal")
        return out

    seen = [bare(e) for e in spectator.events if kind(e) in game_kinds]
    assert [bare(e) for e in replayed if kind(e) in game_kinds] == seen
    deals = [e.hand_dealt for e in replayed if kind(e) == "hand_dealt"]
    assert [d.deal_commitment for d in deals] == [h.commitment for h in resp.record.hands]
    assert all(not d.hand for d in deals)
    draws = [e.card_drawn for e in replayed if kind(e) == "card_drawn"]
    assert all(d.HasField("card") for d in draws)
    assert bool(draws) == (preset == "corriente-6")
