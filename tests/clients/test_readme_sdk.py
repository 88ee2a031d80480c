"""The README's SDK session runs as written against a real server."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _snippet() -> str:
    text = README.read_text()
    start = text.index("### A first session")
    match = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert match, "the README lost its SDK snippet"
    return match.group(1)


async def test_sdk_session_snippet_plays_a_card(
    address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _snippet().replace("localhost:50051", address)
    assert code.endswith("asyncio.run(main())\n")
    code = code.replace("asyncio.run(main())", "")
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    main = namespace["main"]
    await asyncio.wait_for(main(), 30)  # type: ignore[operator]
    out = capsys.readouterr().out
    assert re.search(r"^\d+ snapshot$", out, re.M)
    assert "played; the table is at version" in out
