"""Match records: built as a match is played, they replay to the same events and results.

:func:`play_recorded` plays a match the way a server does (a fresh seed per hand, its pack
given to the engine before the hand is dealt, random legal actions with a few timeouts and
forfeits) and returns the record with every event the live match produced. A record replays
to those events; a record changed in any part is rejected with the part's reason.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from engine import PRESETS, TIMEOUT, Event, Rules, apply, legal_actions, new_match, opening_events
from engine.actions import FORFEIT
from engine.events import HandDealt, HandEnded
from engine.game import with_deck
from engine.record import (
    RECORD_REASONS,
    MatchRecord,
    RecordError,
    Results,
    add_action,
    add_hand,
    bot_seat,
    player_seat,
    record_from_json,
    record_to_json,
    replay,
    start_record,
)
from engine.shuffle import FAIRNESS_REASONS, shuffle


def play_recorded(
    preset: str, rnd: random.Random, forfeit_rate: float = 0.0
) -> tuple[MatchRecord, list[Event]]:
    """A whole match of random legal play, recorded, and the events it produced."""
    rules = Rules.preset(preset)
    n = rules.players
    seats = [player_seat(0, "Ana"), *(bot_seat(s, "random") for s in range(1, n))]
    client_seeds = tuple("ana-seed" if s == 0 else "" for s in range(n))
    seed = rnd.randbytes(32)
    state = new_match(rules, rnd, decks=[shuffle(seed, client_seeds, 1, rules)])
    record = start_record("table-1", rules, state.dealer, seats, "test", started_at_ms=1)
    record = add_hand(record, 1, seed, client_seeds)
    events: list[Event] = list(opening_events(state))
    pending = b""
    offset = 0
    while not state.over:
        if state.hand_no == len(state.decks):  # the next hand's pack, before this hand ends
            pending = rnd.randbytes(32)
            state = with_deck(state, shuffle(pending, client_seeds, state.hand_no + 1, rules))
        offset += rnd.randrange(0, 5000)
        roll = rnd.random()
        if roll < forfeit_rate:
            seat, action, by = rnd.randrange(n), FORFEIT, "server"
        elif roll < 0.05:
            seat, action, by = state.turn, TIMEOUT, "server"
        else:
            seat = state.turn
            action = rnd.choice(legal_actions(state, seat))
            by = "player" if seat == 0 else "bot"
        state, new = apply(state, seat, action)
        record = add_action(record, seat, action, offset, by, new)
        for event in new:
            if isinstance(event, HandDealt):
                record = add_hand(record, event.hand_no, pending, client_seeds)
        events.extend(new)
    return record, events


def _replayed_events(record: MatchRecord) -> list[Event]:
    return [e for step in replay(record) for e in step.events]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_records_replay_to_the_events_and_results_of_the_match(preset: str) -> None:
    for i in range(6):
        record, events = play_recorded(preset, random.Random(f"{preset}/{i}"), forfeit_rate=0.002)
        assert record.over
        assert _replayed_events(record) == events
        last = replay(record)[-1].state
        assert last.over
        assert tuple(last.winners) == record.results.winners
        assert len(record.results.hands) == sum(isinstance(e, HandEnded) for e in events)


def test_json_round_trip_is_exact_and_plain() -> None:
    record, _ = play_recorded("parejas", random.Random(1))
    data = record_to_json(record)
    text = json.dumps(data)
    back = record_from_json(json.loads(text))
    assert back == record
    assert record_to_json(back) == data
    assert data["format"] == "tute-record-v1"
    assert data["shuffle"] == "tute-shuffle-v1"
    assert data["seats"][1] == {
        "seat": 1,
        "kind": "bot",
        "name": "bot (random)",
        "level": "random",
        "player_id": "",
    }
    assert len(data["hands"][0]["server_seed"]) == 64
    assert data["hands"][0]["client_seeds"] == ["ana-seed", "", "", ""]


def test_actions_keep_who_made_them_and_when() -> None:
    record, _ = play_recorded("corriente-6", random.Random(5))
    bys = {a.by for a in record.actions}
    assert bys == {"player", "bot", "server"}
    assert all(a.timeout == (a.action == "timeout") for a in record.actions)
    assert all(a.by == "server" for a in record.actions if a.timeout)
    offsets = [a.offset_ms for a in record.actions]
    assert offsets == sorted(offsets)


# -- a record changed anywhere is rejected -----------------------------------------------------


def _good() -> dict[str, Any]:
    record, _ = play_recorded("corriente-6", random.Random(7))
    assert len(record.hands) >= 2
    return record_to_json(record)


def _flip_hex(text: str, i: int = 0) -> str:
    return text[:i] + ("1" if text[i] == "0" else "0") + text[i + 1 :]


def _reason(data: dict[str, Any]) -> str:
    with pytest.raises(RecordError) as err:
        replay(record_from_json(data))
    assert err.value.reason in RECORD_REASONS
    return err.value.reason


def test_a_tampered_seed_or_commitment_is_a_commitment_mismatch() -> None:
    for hand in (0, 1):
        data = _good()
        data["hands"][hand]["server_seed"] = _flip_hex(data["hands"][hand]["server_seed"], 5)
        assert _reason(data) == "commitment_mismatch"
        data = _good()
        data["hands"][hand]["commitment"] = _flip_hex(data["hands"][hand]["commitment"], 63)
        assert _reason(data) == "commitment_mismatch"


def test_a_tampered_client_seed_or_pack_is_a_pack_mismatch() -> None:
    data = _good()
    data["hands"][1]["client_seeds"][0] = "ana-seee"
    assert _reason(data) == "pack_mismatch"
    data = _good()
    data["hands"][1]["client_seeds"][1] = "x"
    assert _reason(data) == "pack_mismatch"
    data = _good()
    pack = data["hands"][0]["pack"]
    pack[3], pack[4] = pack[4], pack[3]
    assert _reason(data) == "pack_mismatch"


def test_a_tampered_action_or_result_does_not_replay() -> None:
    data = _good()
    # A card action changed to another card the seat could not play.
    cards = [i for i, a in enumerate(data["actions"]) if a["action"][0].isdigit()]
    first = data["actions"][cards[0]]
    first["action"] = "1O" if first["action"] != "1O" else "2O"
    assert _reason(data) in ("illegal_action", "results_mismatch")
    data = _good()
    data["actions"][cards[0]]["seat"] ^= 1
    assert _reason(data) == "illegal_action"
    data = _good()
    data["actions"].pop()
    assert _reason(data) == "match_not_over"
    data = _good()
    data["actions"].append(dict(data["actions"][-1]))
    assert _reason(data) == "illegal_action"
    data = _good()
    data["results"]["winners"] = [1 - data["results"]["winners"][0]]
    assert _reason(data) == "results_mismatch"
    data = _good()
    data["results"]["hands"][0]["totals"][0] += 1
    assert _reason(data) == "results_mismatch"
    data = _good()
    data["results"]["reason"] = "tute" if data["results"]["reason"] != "tute" else "score"
    assert _reason(data) == "results_mismatch"


def test_hands_must_match_the_deals() -> None:
    data = _good()
    data["hands"].pop()
    assert _reason(data) == "missing_hand"
    data = _good()
    extra = dict(data["hands"][-1])
    extra["hand_no"] = len(data["hands"]) + 1
    data["hands"].append(extra)
    assert _reason(data) == "pack_mismatch"  # the seed of another hand shuffles otherwise


def test_a_record_of_another_format_or_shuffle_is_refused() -> None:
    data = _good()
    data["shuffle"] = "tute-shuffle-v9"
    assert _reason(data) == "unknown_shuffle"
    data = _good()
    data["format"] = "tute-record-v0"
    with pytest.raises(RecordError) as err:
        record_from_json(data)
    assert err.value.reason == "unknown_format"


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("seats"),
        lambda d: d["seats"][0].update(kind="ghost"),
        lambda d: d["hands"][0].update(hand_no="1"),
        lambda d: d["hands"][0].update(server_seed="zz" * 32),
        lambda d: d["hands"][0]["client_seeds"].pop(),
        lambda d: d["hands"][0]["pack"].__setitem__(0, "9O"),
        lambda d: d["actions"][0].update(offset_ms=True),
        lambda d: d["actions"][1].update(offset_ms=-1),
        lambda d: d["actions"][0].update(by="ghost"),
        lambda d: d["results"]["hands"][0].update(capote="no"),
        lambda d: d["rules"].update(players=5),
        lambda d: d.update(first_dealer=7),
        lambda d: d.update(hands=[]),
    ],
)
def test_malformed_records_are_bad_records(change: Any) -> None:
    data = _good()
    change(data)
    with pytest.raises(RecordError) as err:
        replay(record_from_json(data))
    assert err.value.reason == "bad_record"


def test_reasons_include_every_fairness_reason() -> None:
    assert set(FAIRNESS_REASONS) <= set(RECORD_REASONS)


def test_an_unfinished_record_does_not_replay() -> None:
    rules = Rules.preset("parejas")
    rec = start_record("t", rules, 0, [bot_seat(s, "random") for s in range(4)], "test")
    rec = add_hand(rec, 1, bytes(32), ("",) * 4)
    with pytest.raises(RecordError) as err:
        replay(rec)
    assert err.value.reason == "match_not_over"
    assert rec.results == Results()
