"""The SDK's documented examples run as written against a real server."""

from __future__ import annotations

import asyncio
import doctest
import types
from pathlib import Path

import clients.cards
import clients.sdk

from ..support.replicas import start_replicas


def _run(module: types.ModuleType, address: str | None = None) -> tuple[doctest.TestResults, str]:
    text = module.__doc__ or ""
    if address is not None:
        text = text.replace("localhost:50051", address)
    globs = dict(vars(module))  # as doctest.testmod runs them
    test = doctest.DocTestParser().get_doctest(text, globs, module.__name__, module.__file__, 0)
    report: list[str] = []
    result = doctest.DocTestRunner().run(test, out=report.append)
    return result, "".join(report)


async def test_sdk_docstring_examples(tmp_path: Path) -> None:
    """Against a server process (its log lines must not mix with the examples' output)."""
    (server,) = await start_replicas("memory", tmp_path, 1)
    try:
        # The examples call asyncio.run(), as a script does: run them in a thread of their own.
        result, report = await asyncio.wait_for(
            asyncio.to_thread(_run, clients.sdk, f"127.0.0.1:{server.port}"), 60
        )
    finally:
        await server.stop()
    assert result.failed == 0, report
    assert result.attempted >= 6


def test_card_notation_examples() -> None:
    result, report = _run(clients.cards)
    assert result.failed == 0, report
    assert result.attempted == 3
