"""The gRPC contract in protos/tute/v1: generated code is current, everything is documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "protos"
PROTO_DIR = PROTO_ROOT / "tute" / "v1"
PROTO_FILES = sorted(PROTO_DIR.glob("*.proto"))
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_connect.py")


def _protoc(*args: str | Path) -> None:
    """Runs protoc exactly as `make proto` does (grpc_tools adds the well-known types)."""
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-Iprotos", *map(str, args)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"protoc failed:\n{proc.stdout}\n{proc.stderr}"


def _generated(directory: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name.endswith(GENERATED_SUFFIXES)
    }


def _rel_sources() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in PROTO_FILES]


def test_proto_sources_exist() -> None:
    names = {p.name for p in PROTO_FILES}
    assert {"card.proto", "rules.proto", "table.proto", "action.proto", "event.proto"} <= names
    assert {"view.proto", "service.proto"} <= names


def test_generated_code_is_current(tmp_path: Path) -> None:
    """Committed *_pb2*.py(i) files equal what `make proto` generates; run `make proto` if not."""
    _protoc(
        f"--python_out={tmp_path}",
        f"--pyi_out={tmp_path}",
        f"--grpc_python_out={tmp_path}",
        f"--plugin=protoc-gen-connectrpc={Path(sys.executable).parent / 'protoc-gen-connectrpc'}",
        f"--connectrpc_out={tmp_path}",
        "--connectrpc_opt=protobuf=google",
        *_rel_sources(),
    )
    fresh = _generated(tmp_path / "tute" / "v1")
    committed = _generated(PROTO_DIR)
    assert fresh, "protoc generated nothing"
    assert sorted(committed) == sorted(fresh), "generated file set differs: run `make proto`"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"generated files out of date (run `make proto`): {stale}"


def test_generated_package_imports() -> None:
    from tute.v1 import action_pb2, card_pb2, service_pb2, service_pb2_grpc

    card = card_pb2.Card(suit=card_pb2.SUIT_ESPADAS, rank=3)
    action = action_pb2.Action(play_card=card)
    assert action.WhichOneof("kind") == "play_card"
    service = service_pb2.DESCRIPTOR.services_by_name["TuteService"]
    assert service.full_name == "tute.v1.TuteService"
    assert {m.name for m in service.methods} == {
        "CreateTable",
        "ListTables",
        "JoinTable",
        "AddBot",
        "LeaveTable",
        "GetTable",
        "SubmitAction",
        "WatchTable",
        "PlayTable",
        "GetMatchRecord",
        "FindMatch",
        "WatchTicket",
        "CreatePlayer",
        "GetPlayer",
        "ListLeaderboard",
        "ListMatches",
    }
    assert service.methods_by_name["WatchTable"].server_streaming
    assert service.methods_by_name["WatchTicket"].server_streaming
    play = service.methods_by_name["PlayTable"]
    assert play.client_streaming and play.server_streaming
    assert hasattr(service_pb2_grpc, "TuteServiceStub")
    assert hasattr(service_pb2_grpc, "TuteServiceServicer")


# --- every element of the contract carries a leading comment -----------------------------------

# Field numbers of descriptor.proto used in SourceCodeInfo.Location.path.
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE = 4, 5, 6
_MSG_FIELD, _MSG_NESTED, _MSG_ENUM, _MSG_ONEOF = 2, 3, 4, 8
_ENUM_VALUE = 2
_SERVICE_METHOD = 2

Element = tuple[str, tuple[int, ...]]


def _enum_elements(
    enum: descriptor_pb2.EnumDescriptorProto, prefix: str, path: tuple[int, ...]
) -> Iterator[Element]:
    name = f"{prefix}.{enum.name}"
    yield f"enum {name}", path
    for i, value in enumerate(enum.value):
        yield f"enum value {name}.{value.name}", (*path, _ENUM_VALUE, i)


def _message_elements(
    msg: descriptor_pb2.DescriptorProto, prefix: str, path: tuple[int, ...]
) -> Iterator[Element]:
    name = f"{prefix}.{msg.name}"
    yield f"message {name}", path
    for i, field in enumerate(msg.field):
        yield f"field {name}.{field.name}", (*path, _MSG_FIELD, i)
    for i, oneof in enumerate(msg.oneof_decl):
        if oneof.name.startswith("_"):  # synthetic oneof of a proto3 `optional` field
            continue
        yield f"oneof {name}.{oneof.name}", (*path, _MSG_ONEOF, i)
    for i, nested in enumerate(msg.nested_type):
        if nested.options.map_entry:  # the entry message protoc makes for a map field
            continue
        yield from _message_elements(nested, name, (*path, _MSG_NESTED, i))
    for i, enum in enumerate(msg.enum_type):
        yield from _enum_elements(enum, name, (*path, _MSG_ENUM, i))


def _file_elements(fd: descriptor_pb2.FileDescriptorProto) -> Iterator[Element]:
    for i, msg in enumerate(fd.message_type):
        yield from _message_elements(msg, fd.package, (_FILE_MESSAGE, i))
    for i, enum in enumerate(fd.enum_type):
        yield from _enum_elements(enum, fd.package, (_FILE_ENUM, i))
    for i, service in enumerate(fd.service):
        yield f"service {fd.package}.{service.name}", (_FILE_SERVICE, i)
        for j, method in enumerate(service.method):
            yield (
                f"rpc {fd.package}.{service.name}.{method.name}",
                (_FILE_SERVICE, i, _SERVICE_METHOD, j),
            )


@pytest.fixture(scope="module")
def descriptor_set(tmp_path_factory: pytest.TempPathFactory) -> descriptor_pb2.FileDescriptorSet:
    out = tmp_path_factory.mktemp("fds") / "tute.binpb"
    _protoc(f"--descriptor_set_out={out}", "--include_source_info", *_rel_sources())
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(out.read_bytes())
    return fds


def test_every_element_has_a_leading_comment(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    undocumented: list[str] = []
    checked = 0
    for fd in descriptor_set.file:
        comments = {tuple(loc.path): loc.leading_comments for loc in fd.source_code_info.location}
        for what, path in _file_elements(fd):
            checked += 1
            if not comments.get(path, "").strip():
                undocumented.append(f"{fd.name}: {what}")
    assert checked > 100
    assert not undocumented, "undocumented proto elements:\n" + "\n".join(undocumented)


def test_every_file_is_in_package_tute_v1(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    assert {fd.name for fd in descriptor_set.file} == {f"tute/v1/{p.name}" for p in PROTO_FILES}
    for fd in descriptor_set.file:
        assert fd.package == "tute.v1", fd.name


def _rules_md() -> Path | None:
    for candidate in (ROOT.parent / "shared" / "RULES.md", ROOT / "shared" / "RULES.md"):
        if candidate.is_file():
            return candidate
    return None


def test_rule_options_cover_rules_md_section_12() -> None:
    """RuleOptions has one field per option of RULES.md §12, with the same name: the engine's
    Rules (which implements §12) always, and §12's own table when RULES.md is beside the repo
    (as in CI and in a developer's checkout)."""
    import dataclasses

    import engine
    from tute.v1 import rules_pb2

    fields = {f.name for f in rules_pb2.RuleOptions.DESCRIPTOR.fields}
    assert fields == {f.name for f in dataclasses.fields(engine.Rules)}
    rules_md = _rules_md()
    if rules_md is not None:
        text = rules_md.read_text(encoding="utf-8")
        section = text.split("## 12. Options", 1)[1].split("\n## ", 1)[0]
        options = set(re.findall(r"^\| `([a-z0-9_]+)` \|", section, flags=re.MULTILINE))
        assert len(options) >= 20
        assert fields == options


# --- the error reasons: one list, documented with their status codes --------------------------

_STATUS_NAMES = (
    "INVALID_ARGUMENT|FAILED_PRECONDITION|NOT_FOUND|UNAUTHENTICATED|PERMISSION_DENIED|ABORTED|"
    "RESOURCE_EXHAUSTED|UNAVAILABLE|INTERNAL"
)


def _file(fds: descriptor_pb2.FileDescriptorSet, name: str) -> descriptor_pb2.FileDescriptorProto:
    return next(fd for fd in fds.file if fd.name == name)


def _comments(fd: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    return {tuple(loc.path): loc.leading_comments for loc in fd.source_code_info.location}


def test_error_reasons_are_the_servers_registry(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    """tute.v1.ErrorReason lists exactly the server's reasons (service.reasons.Reason), each
    value's comment opening with the status code the reason travels with."""
    from service.reasons import STATUS, Reason

    fd = _file(descriptor_set, "tute/v1/errors.proto")
    (enum,) = [e for e in fd.enum_type if e.name == "ErrorReason"]
    comments = _comments(fd)
    assert enum.value[0].name == "ERROR_REASON_UNSPECIFIED" and enum.value[0].number == 0
    documented: dict[str, str] = {}
    for i, value in enumerate(enum.value[1:], start=1):
        assert value.name.startswith("ERROR_REASON_"), value.name
        comment = comments[(_FILE_ENUM, 0, _ENUM_VALUE, i)].strip()
        match = re.match(rf"({_STATUS_NAMES}): \S", comment)
        assert match, f"{value.name}: the comment does not open with a status code: {comment!r}"
        documented[value.name.removeprefix("ERROR_REASON_")] = match.group(1)
    assert set(documented) == {r.value for r in Reason}
    assert documented == {r.value: code.name for r, code in STATUS.items()}


def _reason_groups(text: str) -> Iterator[tuple[str, list[str]]]:
    """Every "STATUS_CODE (REASON, REASON: words; REASON ...)" group of a comment, as the
    code and the reason-like words inside its parentheses."""
    flat = " ".join(line.strip() for line in text.splitlines())
    for match in re.finditer(rf"\b({_STATUS_NAMES}) \(([^()]*)\)", flat):
        yield match.group(1), re.findall(r"\b[A-Z][A-Z0-9_]{3,}\b", match.group(2))


def test_service_comments_name_registered_reasons_under_their_codes(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    """The TuteService comment lists every reason under its status code, and every reason an
    RPC's "Errors:" line names is registered under the code it is listed with."""
    from service.reasons import STATUS, Reason

    fd = _file(descriptor_set, "tute/v1/service.proto")
    comments = _comments(fd)
    service_comment = comments[(_FILE_SERVICE, 0)]
    by_code: dict[str, set[str]] = {}
    for code, reasons in _reason_groups(service_comment.split("Errors:", 1)[1]):
        by_code.setdefault(code, set()).update(reasons)
    expected: dict[str, set[str]] = {}
    for reason, status in STATUS.items():
        if reason.startswith("BAD_") or reason == Reason.UNKNOWN_ACTION:
            continue  # the engine's own input codes: listed in errors.proto only
        expected.setdefault(status.name, set()).add(reason.value)
    assert by_code == expected
    named = 0
    for j, method in enumerate(fd.service[0].method):
        text = comments[(_FILE_SERVICE, 0, _SERVICE_METHOD, j)]
        assert "Errors:" in text, f"{method.name} lists no errors"
        for code, reasons in _reason_groups(text):
            for name in reasons:
                named += 1
                assert name in Reason.__members__, f"{method.name}: unknown reason {name}"
                assert STATUS[Reason(name)].name == code, f"{method.name}: {name} under {code}"
    assert named > 30


def test_buf_generate_writes_the_committed_code(tmp_path: Path) -> None:
    """buf.gen.yaml (grpcio-tools' generators behind protos/grpc_tools_plugin.py) reproduces
    the committed generated files byte for byte, as `make proto` does."""
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [str(bindir / "buf"), "generate", "--template", "buf.gen.yaml", "-o", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"buf generate failed:\n{proc.stdout}\n{proc.stderr}"
    fresh = _generated(tmp_path / "protos" / "tute" / "v1")
    committed = _generated(PROTO_DIR)
    assert sorted(fresh) == sorted(committed)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"buf generate differs from the committed files: {stale}"
