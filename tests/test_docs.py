"""docs/rules.md and docs/frontend.md agree with the contract and the engine.

- Every field of ``RuleOptions`` has a row in the option table of docs/rules.md §12 whose
  default is the one the server applies and whose values are exactly those it accepts.
- Every preset of ``engine.PRESETS`` has a row in §13 listing exactly the options it changes.
- Every ``grpcurl -d`` body in docs/frontend.md parses, field names and enum names included, as
  the request message of the method it calls; those that need no table id or token succeed
  against a real server.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor, json_format, message_factory
from google.protobuf.message import Message

import engine
from service import wire
from service.config import Settings
from service.server import create_server
from tute.v1 import rules_pb2, service_pb2, service_pb2_grpc

DOCS = Path(__file__).resolve().parents[1] / "docs"
RULES_MD = DOCS / "rules.md"
FRONTEND_MD = DOCS / "frontend.md"
OPTION_FIELDS = rules_pb2.RuleOptions.DESCRIPTOR.fields_by_name
UINT32_MAX = 2**32 - 1


def _section(text: str, number: int) -> str:
    """The text of section ``## <number>.`` up to the next ``## `` heading."""
    match = re.search(rf"^## {number}\. .*?(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/rules.md has no section {number}"
    return match.group(0)


def _table_rows(section: str) -> list[list[str]]:
    """The body rows of the markdown table in ``section``, as lists of cell texts."""
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    assert len(lines) > 2, "the section has no table"
    return [[cell.strip() for cell in ln.strip().strip("|").split("|")] for ln in lines[2:]]


def _code(cell: str) -> list[str]:
    """The `code` spans of a table cell, in order."""
    return re.findall(r"`([^`]*)`", cell)


def _wire(rules: engine.Rules, name: str, preset: str = "") -> str | None:
    """How option ``name`` of ``rules`` is sent on the wire: an enum value's name, true/false,
    a number, or None when the field is unset."""
    options = wire.rules_to_proto(preset, rules).options
    field = OPTION_FIELDS[name]
    if field.has_presence and not options.HasField(name):
        return None
    value = getattr(options, name)
    if field.type == descriptor.FieldDescriptor.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name  # type: ignore[union-attr]
    if field.type == descriptor.FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    return str(value)


def _accepted(name: str, value: Any) -> bool:
    """Whether CreateTable would accept ``rules.options.<name> = value`` (no preset)."""
    msg = rules_pb2.Rules(options=rules_pb2.RuleOptions(**{name: value}))
    try:
        wire.rules_from_proto(msg)
    except wire.BadField as exc:
        assert exc.field == f"rules.options.{name}", exc.field
        return False
    return True


def _option_rows() -> dict[str, list[str]]:
    rows = _table_rows(_section(RULES_MD.read_text(), 12))
    out: dict[str, list[str]] = {}
    for row in rows:
        names = _code(row[0])
        assert len(names) == 1, f"option cell without one `name`: {row[0]!r}"
        assert names[0] not in out, f"option {names[0]} is listed twice"
        assert len(row) == 5, f"option row {names[0]} does not have 5 cells"
        out[names[0]] = row
    return out


def test_every_option_has_one_row() -> None:
    assert sorted(_option_rows()) == sorted(OPTION_FIELDS)


@pytest.mark.parametrize("name", sorted(OPTION_FIELDS))
def test_option_default_is_the_servers(name: str) -> None:
    default_cell = _option_rows()[name][2]
    wire = _wire(engine.Rules(), name)
    said = f"{name}: the doc says {default_cell!r}"
    if wire is None:
        assert default_cell.startswith("unset"), f"{said}; the default is unset"
    else:
        assert _code(default_cell)[:1] == [wire], f"{said}; the default is {wire}"


@pytest.mark.parametrize("name", sorted(OPTION_FIELDS))
def test_option_values_are_those_accepted(name: str) -> None:
    values_cell = _option_rows()[name][1]
    listed = _code(values_cell)
    field = OPTION_FIELDS[name]
    if field.type == descriptor.FieldDescriptor.TYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        wire = [v.name for v in enum.values if v.number != 0]
        assert listed == wire, f"{name}: values {wire}, doc lists {listed}"
        assert all(_accepted(name, v.number) for v in enum.values)  # 0 = unset
        assert not _accepted(name, max(v.number for v in enum.values) + 1)
    elif field.type == descriptor.FieldDescriptor.TYPE_BOOL:
        assert listed == ["true", "false"], f"{name}: doc lists {listed}"
    elif name == "first_dealer":
        # "a seat, from `0` to `players − 1`" (checked against the default 4 players)
        assert listed[:1] == ["0"] and "players" in values_cell and "random" in values_cell
        players = engine.Rules().players
        assert all(_accepted(name, seat) for seat in range(players))
        assert not _accepted(name, players)
    else:
        numbers = list(dict.fromkeys(int(v) for v in listed if v.isdigit()))
        said = f"{name}: the doc says {values_cell!r}"
        if "≥" in values_cell:  # "an integer ≥ `low`": no upper bound
            (low,) = numbers
            assert _accepted(name, low), f"{said}, the server refuses {low}"
            assert _accepted(name, UINT32_MAX), (
                f"{said}, the server refuses {UINT32_MAX}: write its range as `low` … `high`"
            )
            assert low == 0 or not _accepted(name, low - 1), f"{said}, the server takes {low - 1}"
        elif "…" in values_cell:  # "`low` … `high`"
            low, high = numbers
            assert _accepted(name, low), f"{said}, the server refuses {low}"
            assert _accepted(name, high), f"{said}, the server refuses {high}"
            assert not _accepted(name, high + 1), f"{said}, the server takes {high + 1}"
            assert low == 0 or not _accepted(name, low - 1), f"{said}, the server takes {low - 1}"
        else:  # a list of values
            assert numbers, f"{name}: no values listed"
            around = range(max(numbers) + 3)
            assert [v for v in around if _accepted(name, v)] == numbers, name


def _preset_rows() -> dict[str, list[str]]:
    rows = _table_rows(_section(RULES_MD.read_text(), 13))
    out: dict[str, list[str]] = {}
    for row in rows:
        (name,) = _code(row[0])
        assert name not in out, f"preset {name} is listed twice"
        out[name] = row
    return out


def test_every_preset_has_one_row() -> None:
    assert sorted(_preset_rows()) == sorted(engine.PRESETS)


@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
def test_preset_row_lists_what_it_sets(preset: str) -> None:
    """The row names `players` and exactly the options whose value differs from the default."""
    rules = engine.PRESETS[preset]
    expected = {"players": _wire(rules, "players", preset)}
    for name in OPTION_FIELDS:
        value = _wire(rules, name, preset)
        if value != _wire(engine.Rules(), name):
            expected[name] = value
    listed: dict[str, str] = {}
    for pair in _code(_preset_rows()[preset][1]):
        name, _, value = pair.partition("=")
        assert name in OPTION_FIELDS, f"{preset}: {name} is not a RuleOptions field"
        listed[name] = value
    assert listed == expected


# --- docs/frontend.md: the grpcurl bodies ------------------------------------------------------

SERVICE = service_pb2.DESCRIPTOR.services_by_name["TuteService"]
_SETTINGS = Settings(
    host="127.0.0.1", port=0, metrics_port=0, http_port=-1, log_format="json", log_level="warning"
)


def _grpcurl_calls() -> list[tuple[str, str]]:
    """(method, JSON body) of every `grpcurl ... -d '<json>' ... <service>/<method>` command."""
    text = FRONTEND_MD.read_text()
    calls = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        command = block.replace("\\\n", " ")
        for line in command.splitlines():
            if not line.lstrip().startswith("grpcurl") or " -d " not in line:
                continue
            words = shlex.split(line.split("|")[0])
            body = words[words.index("-d") + 1]
            target = words[-1]
            assert target.startswith(f"{SERVICE.full_name}/"), line
            calls.append((target.rpartition("/")[2], body))
    return calls


def test_frontend_has_grpcurl_calls() -> None:
    methods = {method for method, _ in _grpcurl_calls()}
    assert {"CreateTable", "JoinTable", "SubmitAction", "WatchTable"} <= methods


def _request(method: str, body: str) -> Message:
    rpc = SERVICE.methods_by_name[method]
    request = message_factory.GetMessageClass(rpc.input_type)()
    json_format.Parse(body, request)  # unknown fields and enum names raise ParseError
    return request


_CALLS = _grpcurl_calls()


@pytest.mark.parametrize(
    "method,body", _CALLS, ids=[f"{i}-{method}" for i, (method, _) in enumerate(_CALLS)]
)
def test_grpcurl_body_is_a_valid_request(method: str, body: str) -> None:
    assert json.loads(body), "an empty body shows nothing"
    request = _request(method, body)
    assert json_format.MessageToDict(request), f"{method}: the body sets nothing"


async def test_grpcurl_calls_without_ids_succeed_on_a_real_server() -> None:
    """The CreateTable and ListTables examples need no table id or token: they work as written."""
    calls = [(m, b) for m, b in _CALLS if m in ("CreateTable", "ListTables")]
    assert {m for m, _ in calls} == {"CreateTable", "ListTables"}
    srv = await create_server(_SETTINGS)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as channel:
            stub = service_pb2_grpc.TuteServiceStub(channel)
            for method, body in calls:
                await getattr(stub, method)(_request(method, body), timeout=10)
    finally:
        await srv.shutdown()
