"""The import rules of docs/architecture.md, read from the source (every import statement,
relative ones resolved, those under ``if TYPE_CHECKING:`` included)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "service", "clients")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """The modules a source file imports (absolute names)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def _sources() -> dict[str, set[str]]:
    return {
        _module_name(path): _imports(path)
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


SOURCES = _sources()


def _uses(imports: set[str], top: str) -> bool:
    return any(name == top or name.startswith(top + ".") for name in imports)


def test_the_scan_sees_the_layers() -> None:
    """The scan finds what it must (so that the rules below can fail)."""
    assert _uses(SOURCES["service.wire.cards"], "engine")
    assert _uses(SOURCES["service.wire.cards"], "tute.v1")
    assert _uses(SOURCES["service.tables.changes"], "engine")
    assert _uses(SOURCES["service.tables.changes"], "service.wire")
    assert _uses(SOURCES["service.servicer"], "tute.v1.service_pb2")
    assert _uses(_imports(Path(__file__)), "pytest")


def test_only_the_wire_knows_both_the_engine_and_the_protos() -> None:
    """In the server, one package converts between engine values and messages. (A client may
    use the engine as a library: clients/bot.py thinks with it, from its own reading of the
    wire.)"""
    both = sorted(
        name
        for name, imports in SOURCES.items()
        if name.startswith("service") and _uses(imports, "engine") and _uses(imports, "tute")
    )
    assert both and all(name.startswith("service.wire") for name in both), both


@pytest.mark.parametrize("layer", ["service.tables", "service.store"])
def test_below_the_servicer_nothing_speaks_protobuf(layer: str) -> None:
    """The table lifecycle and the stores take and return domain values: no ``tute.v1``
    message module (requests, responses or events) is imported there."""
    offenders = sorted(
        name
        for name, imports in SOURCES.items()
        if name.startswith(layer) and _uses(imports, "tute")
    )
    assert offenders == []


def test_requests_and_responses_stay_at_the_edge() -> None:
    """Only the servicer and the server (registration, health names) import the module of the
    request and response messages."""
    users = sorted(
        name
        for name, imports in SOURCES.items()
        if name.startswith("service") and _uses(imports, "tute.v1.service_pb2")
    )
    assert users == ["service.server", "service.servicer"]


def test_the_engine_imports_only_the_standard_library() -> None:
    stdlib = sys.stdlib_module_names
    for name, imports in SOURCES.items():
        if not name.startswith("engine"):
            continue
        outside = sorted(
            i for i in imports if i.split(".")[0] not in stdlib and not i.startswith("engine")
        )
        assert outside == [], name


def test_the_store_knows_neither_the_engine_nor_the_protos() -> None:
    for name, imports in SOURCES.items():
        if name.startswith("service.store"):
            assert not _uses(imports, "engine") and not _uses(imports, "tute"), name


def test_clients_talk_to_the_server_only_over_the_wire() -> None:
    for name, imports in SOURCES.items():
        if name.startswith("clients"):
            assert not _uses(imports, "service"), name


def _listed(tree: str, package: str) -> set[str]:
    """The ``*.py`` names the layout tree lists under ``  <package>/`` (indented below it)."""
    lines = tree.split(f"\n  {package}/", 1)[1].splitlines()[1:]
    names: set[str] = set()
    for line in lines:
        if not line.startswith("    "):
            break
        word = line.split()[0]
        if word.endswith(".py"):
            names.add(word)
    return names


def test_the_architecture_document_names_every_module_of_the_layers() -> None:
    """docs/architecture.md lists each module of service/wire/ and service/tables/, and no
    module that is not there."""
    tree = (ROOT / "docs" / "architecture.md").read_text().split("```")[1]
    for package in ("wire", "tables"):
        files = {p.name for p in (ROOT / "service" / package).glob("*.py")} - {"__init__.py"}
        assert _listed(tree, package) == files, package
