"""``tute verify`` and ``tute replay`` on record files: a good record verifies, a record with
one value changed in any checked part fails with that part's reason, and a replay shows a
seat only what the seat saw."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clients.cli import main
from clients.records import save
from tests.engine.test_record import play_recorded


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    out, err = capsys.readouterr()
    code = done.value.code
    assert isinstance(code, int)
    return code, out, err


@pytest.fixture
def record_file(tmp_path: Path) -> Path:
    record, _ = play_recorded("corriente-6", random.Random(11))
    assert len(record.hands) >= 2 and any(a.timeout for a in record.actions)
    path = tmp_path / "record.json"
    save(record, str(path))
    return path


def test_a_good_record_verifies(capsys: pytest.CaptureFixture[str], record_file: Path) -> None:
    code, out, err = _run(capsys, "verify", str(record_file))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[-1] == "verified"
    hands = json.loads(record_file.read_text())["hands"]
    for h in hands:
        assert f"hand {h['hand_no']}: the seed matches commitment {h['commitment'][:16]}" in out
    assert "actions replayed: every one legal, the results match" in out


def _flip_hex(text: str) -> str:
    return ("1" if text[0] == "0" else "0") + text[1:]


def _other_card(text: str) -> str:
    """The card text with its suit letter changed (one byte)."""
    return text[:-1] + ("C" if text[-1] != "C" else "O")


def _first_card_action(d: dict[str, Any]) -> dict[str, Any]:
    return next(a for a in d["actions"] if a["action"][0].isdigit())


CHANGES: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "server seed": (
        lambda d: d["hands"][1].update(server_seed=_flip_hex(d["hands"][1]["server_seed"])),
        "commitment_mismatch",
    ),
    "commitment": (
        lambda d: d["hands"][0].update(commitment=_flip_hex(d["hands"][0]["commitment"])),
        "commitment_mismatch",
    ),
    "client seed": (
        lambda d: d["hands"][0]["client_seeds"].__setitem__(0, "ana-seeD"),
        "pack_mismatch",
    ),
    "empty client seed": (
        lambda d: d["hands"][1]["client_seeds"].__setitem__(1, "x"),
        "pack_mismatch",
    ),
    "pack": (
        lambda d: d["hands"][1]["pack"].__setitem__(0, _other_card(d["hands"][1]["pack"][0])),
        "pack_mismatch",
    ),
    "hand number": (lambda d: d["hands"][1].update(hand_no=3), "bad_record"),
    "action": (
        lambda d: _first_card_action(d).update(seat=1 - _first_card_action(d)["seat"]),
        "illegal_action",
    ),
    "action time": (lambda d: d["actions"][-1].update(offset_ms=0), "bad_record"),
    "winners": (
        lambda d: d["results"].update(winners=[1 - d["results"]["winners"][0]]),
        "results_mismatch",
    ),
    "hand totals": (
        lambda d: d["results"]["hands"][0]["totals"].__setitem__(
            0, d["results"]["hands"][0]["totals"][0] + 1
        ),
        "results_mismatch",
    ),
    "end reason": (lambda d: d["results"].update(reason="forfeit"), "results_mismatch"),
    "rules": (lambda d: d["rules"].update(players=4), "bad_record"),
    "shuffle": (lambda d: d.update(shuffle="tute-shuffle-v2"), "unknown_shuffle"),
    "format": (lambda d: d.update(format="tute-record-v2"), "unknown_format"),
}


@pytest.mark.parametrize("part", sorted(CHANGES))
def test_a_record_changed_in_one_part_fails(
    capsys: pytest.CaptureFixture[str], record_file: Path, part: str
) -> None:
    change, reason = CHANGES[part]
    data = json.loads(record_file.read_text())
    change(data)
    record_file.write_text(json.dumps(data))
    code, out, err = _run(capsys, "verify", str(record_file))
    assert code == 1
    assert "verified" not in out
    assert f"the record does not verify: {reason}:" in err


def test_one_byte_anywhere_in_a_seed_commitment_or_pack_fails(
    capsys: pytest.CaptureFixture[str], record_file: Path
) -> None:
    """Every hex digit of every seed and commitment, and every card of every pack, changed
    alone (checked in-process against the engine: the command above prints the same)."""
    from engine.record import RecordError, record_from_json, replay

    good = json.loads(record_file.read_text())
    failures = 0
    for k, hand in enumerate(good["hands"]):
        for key in ("server_seed", "commitment"):
            for i in range(64):
                data = json.loads(json.dumps(good))
                text = data["hands"][k][key]
                data["hands"][k][key] = text[:i] + ("f" if text[i] != "f" else "e") + text[i + 1 :]
                with pytest.raises(RecordError) as err:
                    replay(record_from_json(data))
                assert err.value.reason == "commitment_mismatch"
                failures += 1
        for i in range(len(hand["pack"])):
            data = json.loads(json.dumps(good))
            data["hands"][k]["pack"][i] = _other_card(hand["pack"][i])
            with pytest.raises(RecordError) as err:
                replay(record_from_json(data))
            assert err.value.reason == "pack_mismatch"
            failures += 1
    assert failures == len(good["hands"]) * (128 + 40)


def test_an_unreadable_file_is_an_error_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = _run(capsys, "verify", str(bad))
    assert code == 1 and "bad_record" in err


def test_replay_shows_a_seat_only_its_own_cards(
    capsys: pytest.CaptureFixture[str], record_file: Path
) -> None:
    data = json.loads(record_file.read_text())
    code, seat0, err = _run(capsys, "replay", str(record_file), "--seat", "0", "--hand", "1")
    assert code == 0, err
    code, opened, err = _run(capsys, "replay", str(record_file), "--hand", "1")
    assert code == 0, err
    pack = data["hands"][0]["pack"]
    dealer = data["first_dealer"]
    dealt = {s: [pack[k] for k in range(12) if (dealer + 1 + k) % 2 == s] for s in (0, 1)}
    names = [s["name"] for s in data["seats"]]

    def hand_line(seat: int) -> str:
        from engine import parse_card
        from engine.cards import mask_of, mask_text

        return f"  {names[seat]}: " + mask_text(mask_of(parse_card(c) for c in dealt[seat]))

    assert hand_line(0) in seat0.splitlines()
    assert hand_line(1) not in seat0.splitlines()
    assert hand_line(0) in opened.splitlines() and hand_line(1) in opened.splitlines()
    # The seat's view names no card the bot drew from the stock but the turned trump card
    # (the card turned at the deal, or the 7 or 2 of trumps an exchange put in its place).
    trump_suit = pack[12][-1]
    bot_draws = [x for x in seat0.splitlines() if x.startswith(f"  {names[1]} draws")]
    assert len(bot_draws) <= 1 and all(x.endswith(trump_suit) for x in bot_draws)
    assert sum(x.startswith(f"  {names[1]} draws") for x in opened.splitlines()) == (40 - 12) // 2
    assert "hand 2" not in seat0 and "hand 1 ends" in seat0


def test_replay_refuses_a_record_that_does_not_verify(
    capsys: pytest.CaptureFixture[str], record_file: Path
) -> None:
    data = json.loads(record_file.read_text())
    data["results"]["winners"] = [1 - data["results"]["winners"][0]]
    record_file.write_text(json.dumps(data))
    code, out, err = _run(capsys, "replay", str(record_file))
    assert code == 1 and out == ""
    assert "does not verify, so it is not shown: results_mismatch" in err
