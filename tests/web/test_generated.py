"""The browser client's TypeScript (clients/web/src/gen) is what protoc-gen-es writes from
protos/ through clients/web/buf.gen.yaml: a .proto change without `npm run generate` fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "clients" / "web"


def _files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_generated_typescript_is_current(tmp_path: Path) -> None:
    buf = WEB / "node_modules" / ".bin" / "buf"
    assert buf.exists(), "no clients/web/node_modules: run `make web-build` (npm ci) first"
    proc = subprocess.run(
        [str(buf), "generate", "--template", "buf.gen.yaml", "-o", str(tmp_path)],
        cwd=WEB,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"buf generate failed:\n{proc.stdout}\n{proc.stderr}"
    fresh = _files(tmp_path / "src" / "gen")
    committed = _files(WEB / "src" / "gen")
    assert sorted(fresh) == sorted(committed), "generated file set differs: npm run generate"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"clients/web/src/gen is out of date (npm run generate): {stale}"
    protos = {p.stem for p in (ROOT / "protos" / "tute" / "v1").glob("*.proto")}
    assert {Path(n).name.removesuffix("_pb.ts") for n in committed} == protos
