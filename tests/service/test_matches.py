"""Complete matches of every preset played through the API, then replayed on the engine.

Test clients hold every seat's token, play random legal actions until the match ends (some
submissions with ``expected_version``, some with ``request_id``) and watch the table with one
stream per seat and one spectator. Afterwards each hand's pack is rebuilt from what the seats
received privately (dealt hands, trump card, dealer, the 2p draws) and the same actions, read
from the events, are applied to a fresh engine match: its final scores, match points and
winners must be the server's.
"""

from __future__ import annotations

import random
from typing import Any

import grpc
import pytest

import engine
from tute.v1 import rules_pb2, service_pb2

from .helpers import FINISHED, Seated, auth
from .matchplay import (
    Watcher,
    assert_gap_free,
    assert_same_outcome,
    card,
    kind,
    play_match,
    replay,
)


async def seat_and_watch(
    stub, preset: str, options: dict[str, Any]
) -> tuple[Seated, dict[int, Watcher], Watcher]:
    """A table with every seat taken by a test client; a spectator watching from before the
    match starts (snapshot first) and one stream per seat from the first event."""
    rules = rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(**options))
    created = await stub.CreateTable(
        service_pb2.CreateTableRequest(rules=rules, take_seat=True, display_name="p0")
    )
    tid = created.table_id
    tokens = {created.seat: created.seat_token}
    players = len(created.table.seats)
    spectator = Watcher(stub, tid)
    await spectator.wait_until(lambda w: bool(w.snapshots))
    for i in range(1, players):
        joined = await stub.JoinTable(
            service_pb2.JoinTableRequest(table_id=tid, display_name=f"p{i}")
        )
        tokens[joined.seat] = joined.seat_token
    seats = {s: Watcher(stub, tid, t, resume_after=0) for s, t in tokens.items()}
    return Seated(tid, tokens), seats, spectator


async def play_and_replay(
    stub,
    preset: str,
    options: dict[str, Any],
    engine_options: dict[str, Any],
    seed: int,
    *,
    prefer_declarations: bool = False,
) -> dict[str, int]:
    """Play one match, check the streams and the engine replay; return event counts."""
    rng = random.Random(seed)
    seated, seat_watchers, spectator = await seat_and_watch(stub, preset, options)
    try:
        stats = await play_match(stub, seated, rng, prefer_declarations=prefer_declarations)
        final = stats.final
        assert final.status == FINISHED
        last = final.last_event_sequence
        for w in [*seat_watchers.values(), spectator]:
            await w.wait_for_seq(last)
            assert w.error is None
    finally:
        for w in [*seat_watchers.values(), spectator]:
            await w.close()

    # Streams: gap-free, the same numbers and the same public events for every watcher.
    seat_events = {s: w.events for s, w in seat_watchers.items()}
    reference = seat_events[0]
    assert_gap_free(reference, 1, last)
    for s, evs in seat_events.items():
        assert_gap_free(evs, 1, last)
        assert [(e.sequence, e.table_version, kind(e)) for e in evs] == [
            (e.sequence, e.table_version, kind(e)) for e in reference
        ], f"seat {s} saw other events"
    assert len(spectator.snapshots) == 1
    first = spectator.snapshots[0].last_event_sequence + 1
    assert_gap_free(spectator.events, first, last)
    assert [(e.sequence, kind(e)) for e in spectator.events] == [
        (e.sequence, kind(e)) for e in reference[first - 1 :]
    ]
    for e in spectator.events:
        if kind(e) == "hand_dealt":
            assert not e.hand_dealt.hand, "a spectator sees no dealt hand"
        if kind(e) == "card_drawn" and not e.card_drawn.turned_card:
            assert not e.card_drawn.HasField("card"), "a spectator sees no drawn card"
    assert sum(kind(e) == "match_started" for e in spectator.events) == 1
    started = next(e.match_started for e in spectator.events if kind(e) == "match_started")

    # The final event is MatchEnded; the view agrees with it.
    ends = [e for e in reference if kind(e) == "match_ended"]
    assert len(ends) == 1 and kind(reference[-1]) == "match_ended"
    ended = ends[0].match_ended

    # Replay on the engine.
    rules = engine.Rules.preset(preset, **engine_options)
    rep = replay(rules, seat_events)
    dealt = [e.hand_dealt for e in reference if kind(e) == "hand_dealt"]
    assert started.first_dealer == dealt[0].dealer
    assert rep.server_tricks == rep.engine_tricks
    assert rep.server_hands == rep.engine_hands
    assert_same_outcome(rep.state, final, ended)
    counts: dict[str, int] = {}
    for e in reference:
        counts[kind(e)] = counts.get(kind(e), 0) + 1
    counts["submitted"] = stats.actions
    counts["expected_version"] = stats.with_expected_version
    counts["request_id"] = stats.with_request_id
    played = counts.get("card_played", 0)
    assert (
        played
        + counts.get("cante_sung", 0)
        + counts.get("tute_declared", 0)
        + counts.get("trump_exchanged", 0)
        == stats.actions
    ), "every submitted action is exactly one event"
    assert stats.with_expected_version and stats.with_request_id
    return counts


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
async def test_a_match_of_every_preset_replays_on_the_engine(stub, preset: str) -> None:
    counts = await play_and_replay(stub, preset, {}, {}, seed=sorted(engine.PRESETS).index(preset))
    assert counts["hand_dealt"] >= 1
    assert counts["match_ended"] == 1
    assert counts["card_played"] >= engine.PRESETS[preset].players


DECLARING = [
    pytest.param(
        "parejas",
        {
            "cante_singers": rules_pb2.CANTE_SINGERS_SIDE,
            "cantes_per_trick": rules_pb2.CANTES_PER_TRICK_UNLIMITED,
            "forty_before_twenty": rules_pb2.FORTY_BEFORE_TWENTY_OFF,
        },
        {"cante_singers": "side", "cantes_per_trick": "unlimited", "forty_before_twenty": "off"},
        id="parejas-side-unlimited",
    ),
    pytest.param(
        "corriente-8",
        {"swap_two_for_low": True, "swap_requires_trick_won": False},
        {"swap_two_for_low": True, "swap_requires_trick_won": False},
        id="corriente-8-swaps",
    ),
    pytest.param("corriente-6", {}, {}, id="corriente-6"),
    pytest.param(
        "tres",
        {"tute_effect": rules_pb2.TUTE_EFFECT_WINS_UNIT},
        {"tute_effect": "wins_unit"},
        id="tres-tute-unit",
    ),
]


@pytest.mark.parametrize(("preset", "options", "engine_options"), DECLARING)
async def test_matches_with_declarations_replay_on_the_engine(
    stub, preset: str, options: dict[str, Any], engine_options: dict[str, Any]
) -> None:
    """Declarations preferred: cantes, tutes and exchanges happen and replay the same."""
    totals: dict[str, int] = {}
    for seed in range(15):  # until cantes (and in 2p an exchange) happened; usually 1-3
        counts = await play_and_replay(
            stub, preset, options, engine_options, seed=seed, prefer_declarations=True
        )
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
        declared = totals.get("cante_sung", 0) + totals.get("tute_declared", 0)
        exchanged = totals.get("trump_exchanged", 0)
        if declared >= 2 and (exchanged or engine.PRESETS[preset].players != 2):
            break
    assert totals.get("cante_sung", 0) + totals.get("tute_declared", 0) >= 2, totals
    if engine.PRESETS[preset].players == 2:
        assert totals.get("trump_exchanged", 0) >= 1, totals


async def test_leaving_mid_match_replays_as_a_forfeit(stub) -> None:
    """A forfeit is an action too: the replay ends the same way."""
    seated, seat_watchers, spectator = await seat_and_watch(stub, "tres", {})
    rng = random.Random(7)
    try:
        for _ in range(10):
            view = (
                await stub.GetTable(
                    service_pb2.GetTableRequest(table_id=seated.table_id),
                    metadata=auth(seated.tokens[0]),
                )
            ).view
            seat = view.turn_seat
            v = (
                await stub.GetTable(
                    service_pb2.GetTableRequest(table_id=seated.table_id),
                    metadata=auth(seated.tokens[seat]),
                )
            ).view
            await stub.SubmitAction(
                service_pb2.SubmitActionRequest(
                    table_id=seated.table_id, action=rng.choice(list(v.legal_actions))
                ),
                metadata=auth(seated.tokens[seat]),
            )
        left = await stub.LeaveTable(
            service_pb2.LeaveTableRequest(table_id=seated.table_id),
            metadata=auth(seated.tokens[1]),
        )
        assert left.forfeited
        final = (
            await stub.GetTable(
                service_pb2.GetTableRequest(table_id=seated.table_id),
                metadata=auth(seated.tokens[0]),
            )
        ).view
        leaver = seat_watchers[1]
        for w in [*seat_watchers.values(), spectator]:
            if w is leaver:  # its seat is lost: it ends right after its PlayerForfeited
                await w.wait_until(lambda w: w.done)
                assert w.error is not None and w.error.code() == grpc.StatusCode.PERMISSION_DENIED
                assert [kind(e) for e in w.events[-1:]] == ["player_forfeited"]
                assert w.last_seq == final.last_event_sequence - 1
            else:
                await w.wait_for_seq(final.last_event_sequence)
    finally:
        for w in [*seat_watchers.values(), spectator]:
            await w.close()
    events = seat_watchers[0].events
    assert [kind(e) for e in events[-2:]] == ["player_forfeited", "match_ended"]
    rep = replay(engine.Rules.preset("tres"), {s: w.events for s, w in seat_watchers.items()})
    assert rep.state.winners == (0, 2)
    assert_same_outcome(rep.state, final, events[-1].match_ended)
    assert final.match_result.forfeited_seat == 1
    # Cards in the stream are real cards of the pack (sanity of the wire form).
    assert all(
        0 <= card(c.card) < 40
        for e in events
        if kind(e) == "trick_taken"
        for c in e.trick_taken.trick.cards
    )
