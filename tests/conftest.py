"""Settings for the whole suite.

Under pytest-xdist (``make test`` runs ``-n 4 --dist loadgroup``), the store tests that use the
session's Redis Cluster (tests/store/conftest.py) share one worker, so the suite starts one
cluster instead of one per worker; everything else is spread test by test. Every server, Redis
and replica a test starts is on a free port with its data in the test's own temporary
directory, so workers never share one.

Every server a test starts in a subprocess takes a free HTTP port (``TUTE_HTTP_PORT=0``),
never the default 8080 that a server already running on the machine may hold.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TUTE_HTTP_PORT", "0")

STORE_TESTS = Path(__file__).parent / "store"
CLUSTER_FIXTURES = {"redis_cluster", "redis_cluster_url"}


def _uses_the_store_cluster(item: pytest.Item) -> bool:
    if STORE_TESTS not in Path(str(item.path)).parents:
        return False
    if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "cluster" in callspec.params.values()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _uses_the_store_cluster(item):
            item.add_marker(pytest.mark.xdist_group("redis-cluster"))
