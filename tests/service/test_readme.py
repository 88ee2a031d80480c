"""The README's first session runs as written against a real server."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from service.server import Server

README = Path(__file__).resolve().parents[2] / "README.md"


def _snippet() -> str:
    text = README.read_text()
    start = text.index("### The same over the raw stubs")
    match = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert match, "the README lost its first-session snippet"
    return match.group(1)


async def test_first_session_snippet_plays_a_card(server: Server, capsys) -> None:
    code = _snippet().replace("localhost:50051", f"127.0.0.1:{server.port}")
    code = code.replace("asyncio.run(main())", "")
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    main = namespace["main"]
    await asyncio.wait_for(main(), 30)  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "snapshot at event" in out
    assert "played; the table is at version" in out
