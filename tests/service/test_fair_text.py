"""A fair log's JSON text (what a table record stores) is ``json.dumps`` of its ``to_json()``
however it grew: each action's text is encoded once, and a copy or a log whose actions were
replaced never reuses text that no longer matches."""

from __future__ import annotations

import json
import random

import pytest

import engine
from service.tables import changes, fair
from service.tables.fair import FairLog
from service.tables.model import HUMAN, decode_record, encode_record

from .helpers import new_record


def _dumps(log: FairLog) -> str:
    return json.dumps(log.to_json(), separators=(",", ":"))


def test_the_text_follows_every_change_of_the_log() -> None:
    rng = random.Random(5)
    log = FairLog(12.5, 1, ["", 'a "seed", with, commas'], ["ab" * 32, "cd" * 32])
    copies = [log]
    assert log.json_text() == _dumps(log)
    for step in range(200):
        target = rng.choice(copies)
        roll = rng.random()
        if roll < 0.7:
            target.actions.append([rng.randrange(4), rng.randrange(80), step * 900, 0])
        elif roll < 0.8:
            target.outcomes.append([len(target.outcomes) + 1, [70, 60], 0, False, None])
        elif roll < 0.9:
            copies.append(target.copy())
        elif target.actions:
            # the list replaced by one of another history, as long or shorter
            keep = rng.randrange(len(target.actions) + 1)
            target.actions = [[9, 9, 9, 9] for _ in range(keep)]
        for c in copies:
            assert c.json_text() == _dumps(c), step
            assert json.loads(c.json_text()) == c.to_json()


def test_a_copy_extends_apart_from_its_original() -> None:
    log = FairLog(0.0, 0, [""], ["00"], [[0, 1, 0, 0]])
    assert log.json_text() == _dumps(log)
    copy = log.copy()
    copy.actions.append([1, 2, 3, 0])
    assert log.actions == [[0, 1, 0, 0]]
    assert json.loads(log.json_text())[4] == [[0, 1, 0, 0]]
    assert json.loads(copy.json_text())[4] == [[0, 1, 0, 0], [1, 2, 3, 0]]
    assert copy == FairLog(0.0, 0, [""], ["00"], [[0, 1, 0, 0], [1, 2, 3, 0]])


def test_a_log_parsed_from_its_own_text_encodes_no_action_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = FairLog(12.5, 1, ["", 'a "seed", with, commas \u00e9'], ["ab" * 32, "cd" * 32])
    log.actions += [[i % 4, i, i * 900, i % 3] for i in range(50)]
    log.outcomes.append([1, [70, 60], 0, False, None])
    text = log.json_text()
    parsed = FairLog.from_json(json.loads(text), text)
    dumps = json.dumps
    encoded: list[object] = []

    def counting(obj: object, **kw: object) -> str:
        encoded.append(obj)
        return dumps(obj, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fair.json, "dumps", counting)
    assert parsed.json_text() == text
    parsed.actions.append([1, 2, 3, 0])
    assert parsed.json_text() == _dumps(parsed)
    # only the head, the tail and the new action were encoded, never the 50 before
    assert not any(isinstance(o, list) and len(o) >= 50 for o in encoded)
    assert not any(o == log.actions[:1] for o in encoded)
    # text of another form (json.dumps' default separators) is parsed, not reused
    spaced = json.dumps(log.to_json())
    other = FairLog.from_json(json.loads(spaced), spaced)
    assert other.json_text() == text


def test_a_decoded_record_encodes_to_the_bytes_it_came_from() -> None:
    rec = new_record()
    for seat in range(4):
        changes.take_seat(
            rec, seat, HUMAN, f"p{seat}", f"{seat:064x}", "", now=1.0, away_from_start=False
        )
    rng = random.Random(3)
    for step in range(30):
        assert rec.state is not None
        seat = rec.state.turn
        changes.act(rec, seat, rng.choice(engine.legal_actions(rec.state, seat)), now=2.0 + step)
    data = encode_record(rec)
    again = decode_record(data)
    assert again.fair is not None and rec.fair is not None
    assert again.fair.actions == rec.fair.actions and len(again.fair.actions) >= 30
    assert encode_record(again) == data
    # the next action's commit: the same bytes as from the record that never left
    seat = again.state.turn if again.state is not None else 0
    assert rec.state is not None
    action = engine.legal_actions(rec.state, seat)[0]
    changes.act(rec, seat, action, now=40.0)
    changes.act(again, seat, action, now=40.0)
    assert encode_record(again) == encode_record(rec)
