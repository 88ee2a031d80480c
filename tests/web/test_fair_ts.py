"""The web client's own tute-shuffle-v1 (clients/web/src/fair.ts) against the published test
vectors: ``npm test`` in clients/web (tsc, then node's test runner) in a real subprocess."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

WEB = Path(__file__).resolve().parents[2] / "clients" / "web"


def test_the_browsers_shuffle_gives_the_published_vectors() -> None:
    assert (WEB / "node_modules").is_dir(), "no node_modules: run `make web-build` first"
    npm = shutil.which("npm")
    assert npm is not None
    done = subprocess.run(
        [npm, "test"], cwd=WEB, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout and "# pass 7" in done.stdout, done.stdout
