"""A fair log's JSON text (what a table record stores) is ``json.dumps`` of its ``to_json()``
however it grew: each action's text is encoded once, and a copy or a log whose actions were
replaced never reuses text that no longer matches."""

from __future__ import annotations

import json
import random

from service.tables.fair import FairLog


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
