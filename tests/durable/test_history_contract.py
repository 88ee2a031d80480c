"""The history's contract, the same on SQLite (memory and file) and on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import random

import pytest

from engine.record import MatchRecord, replay
from service.durable import History, HistoryConflict, HistoryUnavailable, open_history
from service.durable.migrations import LATEST
from tests.durable.pgproc import _free_port
from tests.engine.test_record import play_recorded

_BASE, _ = play_recorded("corriente-6", random.Random(21))


def _record(table_id: str, *players: str) -> MatchRecord:
    """A real finished record, at table ``table_id``, seat s held by player ``players[s]``."""
    seats = tuple(
        s._replace(player_id=players[s.seat]) if s.seat < len(players) else s for s in _BASE.seats
    )
    return _BASE._replace(table_id=table_id, seats=seats)


async def test_migrations_are_applied_at_start(history: History) -> None:
    assert await history.schema_version() == LATEST


async def test_a_record_is_written_once_and_read_back(history: History) -> None:
    rec = _record("t-1", "p-ana")
    assert await history.get_record("t-1") is None
    assert await history.put_record(rec, finished_at_ms=1000) is True
    assert await history.put_record(rec, finished_at_ms=1000) is False
    assert await history.put_record(rec, finished_at_ms=2000) is False  # a later retry
    back = await history.get_record("t-1")
    assert back == rec
    assert back is not None and replay(back)[-1].state.over


async def test_another_record_for_the_same_table_is_a_conflict(history: History) -> None:
    await history.put_record(_record("t-1"), finished_at_ms=1000)
    with pytest.raises(HistoryConflict):
        await history.put_record(
            _record("t-1")._replace(engine_version="other"), finished_at_ms=1000
        )
    assert await history.get_record("t-1") == _record("t-1")


async def test_concurrent_writes_of_one_record_store_it_once(history: History) -> None:
    rec = _record("t-race", "p-ana")
    results = await asyncio.gather(*(history.put_record(rec, finished_at_ms=5) for _ in range(8)))
    assert sorted(results) == [False] * 7 + [True]
    assert [m.table_id for m in await history.list_matches("p-ana")] == ["t-race"]


async def test_two_replicas_on_one_database_write_once(shared_history_url: str) -> None:
    history_url = shared_history_url
    a, b = open_history(history_url), open_history(history_url)
    await asyncio.gather(a.start(), b.start())  # concurrent migrations apply once
    try:
        assert await a.schema_version() == await b.schema_version() == LATEST
        rec = _record("t-two", "p-ana")
        results = await asyncio.gather(*(h.put_record(rec, finished_at_ms=9) for h in (a, b, a, b)))
        assert sorted(results) == [False, False, False, True]
        assert await b.get_record("t-two") == rec
    finally:
        await a.close()
        await b.close()


async def test_restart_keeps_records_and_migrates_nothing_twice(shared_history_url: str) -> None:
    history_url = shared_history_url
    first = open_history(history_url)
    await first.start()
    await first.put_record(_record("t-keep", "p-ana"), finished_at_ms=3)
    await first.close()
    again = open_history(history_url)
    await again.start()
    try:
        assert await again.schema_version() == LATEST
        assert await again.get_record("t-keep") == _record("t-keep", "p-ana")
    finally:
        await again.close()


async def test_a_players_matches_page_newest_first(history: History) -> None:
    for i in range(7):
        players = ("p-ana", "p-bea") if i % 2 else ("p-bea", "p-ana")
        await history.put_record(_record(f"t-{i}", *players), finished_at_ms=100 + i // 2)
    await history.put_record(_record("t-other", "p-cid"), finished_at_ms=500)
    page1 = await history.list_matches("p-ana", limit=3)
    assert [(m.table_id, m.finished_at_ms) for m in page1] == [
        ("t-6", 103),
        ("t-5", 102),
        ("t-4", 102),
    ]
    last = page1[-1]
    page2 = await history.list_matches(
        "p-ana", before=(last.finished_at_ms, last.table_id), limit=10
    )
    assert [m.table_id for m in page2] == ["t-3", "t-2", "t-1", "t-0"]
    assert [m.seat for m in page2] == [0, 1, 0, 1]
    assert await history.list_matches("p-nobody") == []


async def test_retention_prunes_ranked_and_casual_apart(history: History) -> None:
    await history.put_record(_record("casual-old"), finished_at_ms=10)
    await history.put_record(_record("casual-new"), finished_at_ms=30)
    await history.put_record(_record("ranked-old", "p-ana"), finished_at_ms=10, ranked=True)
    assert await history.prune(ranked=False, finished_before_ms=20) == 1
    assert await history.get_record("casual-old") is None
    assert await history.get_record("casual-new") is not None
    assert await history.get_record("ranked-old") is not None
    assert await history.prune(ranked=True, finished_before_ms=20) == 1
    assert await history.list_matches("p-ana") == []


async def test_an_unreachable_postgresql_is_unavailable() -> None:
    h = open_history(f"postgresql://postgres@127.0.0.1:{_free_port()}/postgres")
    with pytest.raises(HistoryUnavailable):
        await h.start()


async def test_calls_before_start_are_unavailable(history_url: str) -> None:
    h = open_history(history_url)
    with pytest.raises(HistoryUnavailable):
        await h.get_record("t")


def test_history_urls() -> None:
    from service.durable.postgres import PostgresHistory
    from service.durable.sqlite import SqliteHistory

    assert isinstance(open_history(""), SqliteHistory)
    assert open_history("sqlite:///var/x.db").path == "/var/x.db"  # type: ignore[attr-defined]
    assert isinstance(open_history("postgresql://u@h/db"), PostgresHistory)
    assert open_history("/data/h.db").path == "/data/h.db"  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        open_history("mysql://x")
