"""The memory player store: guests, outside subjects, idempotent ranked results, leaderboard."""

from __future__ import annotations

import pytest

from service.auth import hash_token
from service.players import MemoryPlayerStore, Rated, Standing, bot_rated, rate_match


async def test_guests_are_found_by_their_token_hash_only() -> None:
    store = MemoryPlayerStore()
    alice = await store.create_guest("Alice", hash_token("tok-a"))
    assert await store.get(alice.player_id) == alice
    assert await store.by_token_hash(hash_token("tok-a")) == alice
    assert await store.by_token_hash(hash_token("tok-b")) is None
    assert "tok-a" not in repr(store.__dict__)
    with pytest.raises(ValueError):
        await store.create_guest("Eve", hash_token("tok-a"))


async def test_an_outside_subject_is_one_player_per_issuer() -> None:
    store = MemoryPlayerStore()
    one = await store.by_subject("https://id.example", "u1", "Uno")
    assert await store.by_subject("https://id.example", "u1", "renamed") == one
    other = await store.by_subject("https://other.example", "u1", "Uno")
    assert other.player_id != one.player_id


async def test_a_ranked_result_is_recorded_once_per_table() -> None:
    store = MemoryPlayerStore()
    a = await store.create_guest("A", hash_token("a"))
    b = await store.create_guest("B", hash_token("b"))
    changes = rate_match(
        "4p",
        [[Rated(a.player_id), bot_rated("easy")], [Rated(b.player_id), bot_rated("medium")]],
        winner_side=0,
        leavers=(),
    )
    assert await store.record_ranked("t1", changes, cooldowns={b.player_id: 99.0})
    assert not await store.record_ranked("t1", changes, cooldowns={b.player_id: 500.0})
    sa = (await store.standings(a.player_id))["4p"]
    sb = (await store.standings(b.player_id))["4p"]
    assert (sa.games, sa.wins, sb.games, sb.wins) == (1, 1, 1, 0)
    assert sa.display > sb.display
    assert (await store.standings(a.player_id))["2p"].games == 0
    assert await store.cooldown_until(b.player_id) == 99.0
    assert await store.cooldown_until(a.player_id) == 0.0


async def test_the_leaderboard_pages_best_first_and_lists_no_bot_or_newcomer() -> None:
    store = MemoryPlayerStore()
    players = [await store.create_guest(f"P{i}", hash_token(f"t{i}")) for i in range(5)]
    await store.create_guest("Idle", hash_token("idle"))
    for i, p in enumerate(players):
        side = [[Rated(p.player_id)], [bot_rated("medium")]]
        for n in range(i):
            await store.record_ranked(f"{p.player_id}-{n}", rate_match("2p", side, 0))
            side = [[Rated(p.player_id, *_mu_sigma(await store.standings(p.player_id)))], side[1]]
        await store.record_ranked(f"{p.player_id}-last", rate_match("2p", side, 1))
    first = await store.leaderboard("2p", limit=3)
    last = first[-1]
    rest = await store.leaderboard(
        "2p", after=(last.standing.display, last.player.player_id), limit=3
    )
    rows = first + rest
    assert len(rows) == 5 and len(first) == 3
    shown = [r.standing.display for r in rows]
    assert shown == sorted(shown, reverse=True)
    assert {r.player.player_id for r in rows} == {p.player_id for p in players}
    with pytest.raises(ValueError):
        await store.leaderboard("9p")


def _mu_sigma(standings: dict[str, Standing]) -> tuple[float, float]:
    s = standings["2p"]
    return s.mu, s.sigma
