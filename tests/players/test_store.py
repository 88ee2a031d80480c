"""The player store's contract on memory, SQLite and a real PostgreSQL: guests, outside
subjects, ranked results once per table, the leaderboard, each player's current ranked
table."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from service.auth import hash_token
from service.players import (
    MemoryPlayerStore,
    PlayerStore,
    RankedHold,
    Rated,
    StaleRating,
    Standing,
    bot_rated,
    rate_match,
)
from service.players.postgres import PostgresPlayerStore
from service.players.sqlite import SqlitePlayerStore

from ..durable.conftest import fresh_postgres_url, postgres  # noqa: F401 - the session fixture


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: object) -> AsyncIterator[PlayerStore]:
    if request.param == "memory":
        yield MemoryPlayerStore()
        return
    db: SqlitePlayerStore | PostgresPlayerStore
    if request.param == "sqlite":
        db = SqlitePlayerStore(f"{tmp_path}/players.db")
    else:
        db = PostgresPlayerStore(await fresh_postgres_url(request.getfixturevalue("postgres")))
    await db.start()
    yield db
    await db.close()


async def test_guests_are_found_by_their_token_hash_only(store: PlayerStore) -> None:
    alice = await store.create_guest("Alice", hash_token("tok-a"))
    assert await store.get(alice.player_id) == alice
    assert await store.by_token_hash(hash_token("tok-a")) == alice
    assert await store.by_token_hash(hash_token("tok-b")) is None
    assert "tok-a" not in repr(store.__dict__)
    with pytest.raises(ValueError):
        await store.create_guest("Eve", hash_token("tok-a"))


async def test_an_outside_subject_is_one_player_per_issuer(store: PlayerStore) -> None:
    one = await store.by_subject("https://id.example", "u1", "Uno")
    assert await store.by_subject("https://id.example", "u1", "renamed") == one
    other = await store.by_subject("https://other.example", "u1", "Uno")
    assert other.player_id != one.player_id


async def test_a_ranked_result_is_recorded_once_per_table(store: PlayerStore) -> None:
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


async def test_a_result_from_a_rating_that_moved_since_is_refused(store: PlayerStore) -> None:
    """Two matches of one player rated from the same rating: the second is refused (nothing
    of it applied, its table not marked) and goes through once computed again."""
    a = await store.create_guest("A", hash_token("a"))
    side = [[Rated(a.player_id)], [bot_rated("easy")]]
    first, second = rate_match("2p", side, 0), rate_match("2p", side, 1)
    assert await store.record_ranked("t1", first)
    after_first = await store.standings(a.player_id)
    with pytest.raises(StaleRating):
        await store.record_ranked("t2", second, cooldowns={a.player_id: 99.0})
    assert await store.standings(a.player_id) == after_first
    assert await store.cooldown_until(a.player_id) == 0.0
    again = rate_match("2p", [[Rated(a.player_id, *_mu_sigma(after_first))], side[1]], 1)
    assert await store.record_ranked("t2", again)
    assert not await store.record_ranked("t1", first)  # a repeat is still just a repeat
    now = (await store.standings(a.player_id))["2p"]
    assert (now.games, now.wins) == (2, 1)
    assert (now.mu, now.sigma) == (again[0].mu_after, again[0].sigma_after)


async def test_the_current_ranked_table_is_kept_until_its_result_is_recorded(
    store: PlayerStore,
) -> None:
    """Seated at a ranked table, every player of it holds it (bots are skipped), with its
    cooldown, in one read; the table's result clears it for all of them, the abandoned
    partner (no rating change) too, and leaves a later table of theirs alone."""
    a, b, c, d = [await store.create_guest(n, hash_token(n)) for n in "abcd"]
    assert await store.ranked_hold(a.player_id) == RankedHold()
    assert await store.ranked_hold("nobody") == RankedHold()
    seated = [a.player_id, "bot:easy", b.player_id, c.player_id]
    await store.seat_ranked("t1", seated)
    await store.seat_ranked("t1", seated)  # again, as another replica seating the plan
    await store.seat_ranked("t2", [d.player_id])
    for p in (a, b, c):
        assert await store.ranked_hold(p.player_id) == RankedHold(0.0, "t1")
    assert await store.ranked_hold("bot:easy") == RankedHold()
    assert await store.get("bot:easy") is None

    # a left: its side loses, its partner b gets no change; c later sits at another table
    await store.seat_ranked("t3", [c.player_id])
    changes = rate_match(
        "4p",
        [[Rated(a.player_id), Rated(b.player_id)], [Rated(c.player_id), bot_rated("easy")]],
        winner_side=1,
        leavers=(a.player_id,),
    )
    assert b.player_id not in {ch.player_id for ch in changes}
    assert await store.record_ranked("t1", changes, cooldowns={a.player_id: 99.0})
    assert await store.ranked_hold(a.player_id) == RankedHold(99.0, "")
    assert await store.ranked_hold(b.player_id) == RankedHold()
    assert await store.ranked_hold(c.player_id) == RankedHold(0.0, "t3")
    assert await store.ranked_hold(d.player_id) == RankedHold(0.0, "t2")
    assert not await store.record_ranked("t1", changes)  # a repeat clears nothing more
    assert await store.ranked_hold(c.player_id) == RankedHold(0.0, "t3")


async def test_the_leaderboard_pages_best_first_and_lists_no_bot_or_newcomer(
    store: PlayerStore,
) -> None:
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


async def test_a_result_naming_an_unknown_player_changes_nothing(store: PlayerStore) -> None:
    a = await store.create_guest("A", hash_token("a"))
    changes = rate_match("2p", [[Rated(a.player_id)], [Rated("nobody")]], winner_side=0)
    with pytest.raises(ValueError, match="nobody"):
        await store.record_ranked("t1", changes)
    assert (await store.standings(a.player_id))["2p"].games == 0
    good = rate_match("2p", [[Rated(a.player_id)], [bot_rated("easy")]], winner_side=0)
    assert await store.record_ranked("t1", good)  # the failed write did not mark the table


async def test_the_sqlite_store_keeps_players_and_results_across_a_restart(
    tmp_path: object,
) -> None:
    path = f"{tmp_path}/players.db"
    first = SqlitePlayerStore(path)
    await first.start()
    a = await first.create_guest("A", hash_token("a"))
    won = rate_match("2p", [[Rated(a.player_id)], [bot_rated("easy")]], winner_side=0)
    assert await first.record_ranked("t1", won)
    await first.close()
    again = SqlitePlayerStore(path)
    await again.start()
    try:
        assert await again.by_token_hash(hash_token("a")) == a
        assert (await again.standings(a.player_id))["2p"].wins == 1
        assert not await again.record_ranked("t1", won)
    finally:
        await again.close()
