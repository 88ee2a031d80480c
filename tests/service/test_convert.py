"""service/wire.py: round-trips, BadField paths, and no hidden card in any view or event.

The invariant test plays random matches of every preset (and of a few option mixes) with the
engine, converts every event batch and every view for every seat and for a spectator, sends
them through the wire format, and checks that each audience only ever receives cards it may
see: its own hand, the public held cards of RULES.md §3, played cards, the turned card and the
trump card (plus the four cards a tute shows).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from google.protobuf import message as pb_message

import engine
from engine import EXCHANGE, FORFEIT, SING, TIMEOUT, TUTE_11, TUTE_12, Rules, State
from engine.cards import POINTS, RANK_OF, SUIT_OF, card_of, parse_card, parse_cards
from engine.events import (
    CardPlayed,
    GameEnded,
    HandEnded,
    MatchEnded,
    PlayerForfeited,
    TuteDeclared,
)
from engine.rules import Scoring, TieRule, TuteEffect
from service import wire
from service.tables.model import (
    BOT,
    FINISHED,
    HUMAN,
    PLAYING,
    PRIVATE,
    PUBLIC,
    WAITING,
    GameRecord,
    SeatInfo,
    TableRecord,
    Visibility,
)
from service.wire import BadField, EventVariants
from tute.v1 import action_pb2, card_pb2, event_pb2, rules_pb2, score_pb2, table_pb2, view_pb2

from .matchplay import HandTally

PRESET_NAMES = sorted(engine.PRESETS)
OPTION_FIELDS: list[Any] = list(rules_pb2.RuleOptions.DESCRIPTOR.fields)

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def cards_in(msg: pb_message.Message) -> list[int]:
    """Every Card message anywhere inside ``msg`` (through the descriptors), as engine cards."""
    found: list[int] = []

    def walk(m: pb_message.Message) -> None:
        if m.DESCRIPTOR is card_pb2.Card.DESCRIPTOR:
            assert isinstance(m, card_pb2.Card)
            found.append(wire.card_from_proto(m))
            return
        for fd, value in m.ListFields():
            if fd.message_type is None:
                continue
            if fd.is_repeated:
                for item in value:
                    walk(item)
            else:
                walk(value)

    walk(msg)
    return found


def round_trip(msg: Any) -> Any:
    """``msg`` after a trip through the wire format."""
    return type(msg).FromString(msg.SerializeToString())


def mask(cards: Sequence[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def table_cards(state: State) -> int:
    """Cards of ``state`` everybody may see: public held, played, turned and trump cards."""
    m = state.public | 1 << state.trump_card
    if state.stock:
        m |= 1 << state.stock[-1]
    for c in state.trick:
        m |= 1 << c
    for _, cards, _ in state.history:
        for c in cards:
            m |= 1 << c
    if state.last_result is not None:
        m |= state.last_result.tute_cards
    return m


def make_record(
    state: State | None,
    rules: Rules,
    preset: str = "",
    *,
    visibility: Visibility = PUBLIC,
    games: list[GameRecord] | None = None,
    forfeited: int = -1,
    deadline: float = 0.0,
) -> TableRecord:
    n = rules.players
    seats = [SeatInfo(HUMAN, f"p{i}", f"hash{i}", "") for i in range(n)]
    status = WAITING if state is None else FINISHED if state.over else PLAYING
    return TableRecord(
        table_id="t-1",
        preset=preset,
        rules=rules,
        visibility=visibility,
        invite_code="CODE42" if visibility == PRIVATE else "",
        created_at=1_700_000_000.25,
        seats=seats,
        status=status,
        state=state,
        deadline=deadline,
        games=games or [],
        last_seq=17,
        version=9,
        forfeited_seat=forfeited,
    )


def kind(ev: event_pb2.Event) -> str:
    k = ev.WhichOneof("kind")
    assert k is not None
    return str(k)


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------


def test_option_fields_match_engine_rules() -> None:
    assert [f.name for f in OPTION_FIELDS] == list(Rules().options())


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_rules_round_trip_every_preset(preset: str) -> None:
    rules = Rules.preset(preset)
    assert wire.rules_from_proto(rules_pb2.Rules(preset=preset)) == (preset, rules)
    msg = round_trip(wire.rules_to_proto(preset, rules))
    assert msg.preset == preset
    # Every option is set in a response, except a random first dealer.
    names = {fd.name for fd, _ in msg.options.ListFields()}
    assert names == {f.name for f in OPTION_FIELDS} - {"first_dealer"}
    assert wire.rules_from_proto(msg) == (preset, rules)
    # Effective options alone (no preset name) give the same rules.
    assert wire.rules_from_proto(rules_pb2.Rules(options=msg.options)) == ("", rules)


def test_rules_defaults_without_preset() -> None:
    assert wire.rules_from_proto(rules_pb2.Rules()) == ("", Rules())
    assert wire.rules_from_proto(rules_pb2.Rules(options=rules_pb2.RuleOptions())) == (
        "",
        Rules(),
    )


def _option_values(fd: Any) -> list[Any]:
    if fd.enum_type is not None:
        return [v.number for v in fd.enum_type.values if v.number != 0]
    if fd.type == fd.TYPE_BOOL:
        return [True, False]
    return {
        "players": [2, 3, 4],
        "hand_size_2p": [6, 8],
        "capote_value": [1, 2],
        "first_dealer": [0, 1, 2, 3],
        "turn_time_s": [0, 1, 30, 3600],
        "target_points": [1, 2, 101, 1000],
    }.get(fd.name, [1, 2, 7, 15])


def _engine_value(fd: Any, value: Any) -> Any:
    if fd.enum_type is None:
        return value
    prefix = fd.enum_type.values_by_number[0].name.removesuffix("UNSPECIFIED")
    return fd.enum_type.values_by_number[value].name.removeprefix(prefix).lower()


@pytest.mark.parametrize("fd", OPTION_FIELDS, ids=lambda fd: fd.name)
def test_rules_every_option_value_round_trips(fd: Any) -> None:
    for value in _option_values(fd):
        msg = rules_pb2.Rules(options=rules_pb2.RuleOptions(**dict[str, Any]({fd.name: value})))
        preset, rules = wire.rules_from_proto(msg)
        assert preset == ""
        assert rules.options()[fd.name] == _engine_value(fd, value)
        # Everything else keeps the §12 defaults.
        others = {k: v for k, v in rules.options().items() if k != fd.name}
        assert others == {k: v for k, v in Rules().options().items() if k != fd.name}
        back = round_trip(wire.rules_to_proto("", rules))
        assert getattr(back.options, fd.name) == value
        assert wire.rules_from_proto(back) == ("", rules)


def test_rules_overrides_on_a_preset() -> None:
    msg = rules_pb2.Rules(
        preset="corriente-juegos",
        options=rules_pb2.RuleOptions(
            hand_size_2p=6,
            stock_phase_rules=rules_pb2.STOCK_PHASE_RULES_STRICT,
            tie_rule=rules_pb2.TIE_RULE_UNSPECIFIED,  # unspecified keeps the preset's (none)
            swap_seven=False,
            first_dealer=1,
        ),
    )
    preset, rules = wire.rules_from_proto(msg)
    assert preset == "corriente-juegos"
    assert rules == Rules.preset(
        "corriente-juegos",
        hand_size_2p=6,
        stock_phase_rules="strict",
        swap_seven=False,
        first_dealer=1,
    )
    assert isinstance(rules.tie_rule, TieRule) and rules.tie_rule.value == "none"
    back = wire.rules_to_proto(preset, rules)
    assert back.options.HasField("first_dealer") and back.options.first_dealer == 1
    # An explicit false is an override, not "unset".
    _, r2 = wire.rules_from_proto(
        rules_pb2.Rules(preset="parejas", options=rules_pb2.RuleOptions(tute_enabled=False))
    )
    assert r2.tute_enabled is False


def test_rules_to_proto_returns_independent_copies() -> None:
    a = wire.rules_to_proto("parejas", Rules.preset("parejas"))
    a.options.players = 2
    a.preset = "x"
    b = wire.rules_to_proto("parejas", Rules.preset("parejas"))
    assert b.preset == "parejas" and b.options.players == 4


def _bad_field(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(BadField) as info:
        fn(*args, **kwargs)
    assert info.value.description
    return str(info.value.field)


@pytest.mark.parametrize(
    "fd", [fd for fd in OPTION_FIELDS if fd.enum_type is not None], ids=lambda fd: fd.name
)
def test_rules_unknown_enum_number_names_the_field(fd: Any) -> None:
    msg = rules_pb2.Rules(options=rules_pb2.RuleOptions(**dict[str, Any]({fd.name: 99})))
    assert _bad_field(wire.rules_from_proto, msg) == f"rules.options.{fd.name}"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"players": 5}, "players"),
        ({"players": 1}, "players"),
        ({"players": 0}, "players"),
        ({"hand_size_2p": 7}, "hand_size_2p"),
        ({"capote_value": 3}, "capote_value"),
        ({"tute_unit_value": 0}, "tute_unit_value"),
        ({"target_points": 0}, "target_points"),
        ({"games_to_win": 0}, "games_to_win"),
        ({"target_match_points": 0}, "target_match_points"),
        ({"first_dealer": 4}, "first_dealer"),
        ({"players": 2, "first_dealer": 2}, "first_dealer"),
    ],
)
def test_rules_invalid_option_names_the_field(options: dict[str, Any], field: str) -> None:
    msg = rules_pb2.Rules(options=rules_pb2.RuleOptions(**options))
    assert _bad_field(wire.rules_from_proto, msg) == f"rules.options.{field}"
    # The prefix follows the request's own path.
    assert _bad_field(wire.rules_from_proto, msg, "req.rules") == f"req.rules.options.{field}"


def test_rules_first_dealer_checked_against_the_presets_players() -> None:
    msg = rules_pb2.Rules(preset="tres", options=rules_pb2.RuleOptions(first_dealer=3))
    assert _bad_field(wire.rules_from_proto, msg) == "rules.options.first_dealer"


def test_rules_unknown_preset() -> None:
    for name in ("nope", "PAREJAS", " parejas", "x" * 10_000):
        field = _bad_field(wire.rules_from_proto, rules_pb2.Rules(preset=name))
        assert field == "rules.preset"
    with pytest.raises(BadField) as info:
        wire.rules_from_proto(rules_pb2.Rules(preset="x" * 10_000))
    assert "x" * 100 not in str(info.value)  # the bad input is not echoed


# ---------------------------------------------------------------------------------------------
# Cards, suits and actions
# ---------------------------------------------------------------------------------------------


def test_every_card_round_trips() -> None:
    seen = set()
    for c in range(40):
        msg = round_trip(wire.card_to_proto(c))
        assert msg.suit == SUIT_OF[c] + 1 and msg.rank == RANK_OF[c]
        assert wire.card_from_proto(msg) == c
        seen.add((msg.suit, msg.rank))
    assert len(seen) == 40
    assert wire.card_to_proto(parse_card("12O")) == card_pb2.Card(suit=card_pb2.SUIT_OROS, rank=12)
    assert wire.card_to_proto(parse_card("3E")) == card_pb2.Card(suit=card_pb2.SUIT_ESPADAS, rank=3)


def test_card_to_proto_returns_independent_copies() -> None:
    a = wire.card_to_proto(0)
    a.rank = 12
    assert wire.card_to_proto(0).rank == 1


def test_suits_round_trip() -> None:
    for s in range(4):
        assert wire.suit_from_proto(wire.suit_to_proto(s)) == s
    assert wire.suit_to_proto(0) == card_pb2.SUIT_OROS
    assert wire.suit_to_proto(3) == card_pb2.SUIT_BASTOS
    assert _bad_field(wire.suit_from_proto, 0, "x.suit") == "x.suit"
    assert _bad_field(wire.suit_from_proto, 5, "x.suit") == "x.suit"


@pytest.mark.parametrize("rank", [0, 8, 9, 13, 2**32 - 1])
def test_bad_rank(rank: int) -> None:
    msg = card_pb2.Card(suit=card_pb2.SUIT_COPAS, rank=rank)
    assert _bad_field(wire.card_from_proto, msg, "card") == "card.rank"


@pytest.mark.parametrize("suit", [0, 5, 99])
def test_bad_suit(suit: int) -> None:
    msg = card_pb2.Card(suit=suit, rank=1)  # type: ignore[arg-type]
    assert _bad_field(wire.card_from_proto, msg, "card") == "card.suit"


def test_every_action_round_trips() -> None:
    for a in range(EXCHANGE + 1):
        msg = round_trip(wire.action_to_proto(a))
        assert wire.action_from_proto(msg) == a
    assert wire.action_to_proto(SING + 2).sing == card_pb2.SUIT_ESPADAS
    assert wire.action_to_proto(TUTE_12).declare_tute.rank == 12
    assert wire.action_to_proto(TUTE_11).declare_tute.rank == 11
    assert wire.action_to_proto(EXCHANGE).WhichOneof("kind") == "exchange_trump"
    assert wire.action_to_proto(5).play_card == wire.card_to_proto(5)
    for server_only in (TIMEOUT, FORFEIT, -1, 99):
        with pytest.raises(ValueError):
            wire.action_to_proto(server_only)


def test_action_to_proto_returns_independent_copies() -> None:
    a = wire.action_to_proto(3)
    a.play_card.rank = 12
    assert wire.action_to_proto(3).play_card.rank == 4


@pytest.mark.parametrize(
    ("msg", "field"),
    [
        (action_pb2.Action(), "action"),
        (
            action_pb2.Action(play_card=card_pb2.Card(suit=card_pb2.SUIT_OROS, rank=8)),
            "action.play_card.rank",
        ),
        (action_pb2.Action(play_card=card_pb2.Card(rank=1)), "action.play_card.suit"),
        (action_pb2.Action(play_card=card_pb2.Card()), "action.play_card.suit"),
        (action_pb2.Action(sing=card_pb2.SUIT_UNSPECIFIED), "action.sing"),
        (action_pb2.Action(sing=99), "action.sing"),  # type: ignore[arg-type]
        (
            action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=10)),
            "action.declare_tute.rank",
        ),
        (action_pb2.Action(declare_tute=action_pb2.DeclareTute()), "action.declare_tute.rank"),
    ],
)
def test_bad_action_names_the_field(msg: action_pb2.Action, field: str) -> None:
    assert _bad_field(wire.action_from_proto, msg) == field


def test_action_field_prefix() -> None:
    msg = action_pb2.Action(play_card=card_pb2.Card(suit=card_pb2.SUIT_OROS, rank=9))
    assert _bad_field(wire.action_from_proto, msg, "req.action") == "req.action.play_card.rank"


# ---------------------------------------------------------------------------------------------
# Tables and the service's own events
# ---------------------------------------------------------------------------------------------


def test_table_to_proto() -> None:
    rules = Rules.preset("tres")
    rec = make_record(None, rules, "tres", visibility=PRIVATE)
    rec.seats[1] = SeatInfo()
    rec.seats[2] = SeatInfo(BOT, "Bot 2", "", "random")
    rec.connected = frozenset({0})
    msg = round_trip(wire.table_to_proto(rec))
    assert msg.table_id == "t-1" and msg.version == 9
    assert msg.status == table_pb2.TABLE_STATUS_WAITING
    assert msg.visibility == table_pb2.VISIBILITY_PRIVATE
    assert msg.free_seats == 1
    assert msg.create_time.seconds == 1_700_000_000 and msg.create_time.nanos == 250_000_000
    assert msg.rules == wire.rules_to_proto("tres", rules)
    s0, s1, s2 = msg.seats
    assert (s0.index, s0.side, s0.occupant, s0.display_name, s0.connected) == (
        0,
        0,
        table_pb2.OCCUPANT_KIND_HUMAN,
        "p0",
        True,
    )
    assert (s1.index, s1.occupant, s1.display_name, s1.connected) == (
        1,
        table_pb2.OCCUPANT_KIND_EMPTY,
        "",
        False,
    )
    assert (s2.index, s2.side, s2.occupant, s2.bot_level, s2.connected) == (
        2,
        2,
        table_pb2.OCCUPANT_KIND_BOT,
        "random",
        True,
    )
    assert "hash" not in str(msg)  # never a token hash
    # 4 players: partners share a side.
    rec4 = make_record(None, Rules(), "parejas")
    assert [s.side for s in wire.table_to_proto(rec4).seats] == [0, 1, 0, 1]


def test_service_events() -> None:
    rules = Rules.preset("parejas")
    rec = make_record(None, rules, "parejas")
    rec.seats[3] = SeatInfo(BOT, "Bot", "", "random")
    joined = wire.seat_joined_event(rec, 3)
    assert joined.seat_joined.seat.index == 3 and joined.seat_joined.seat.side == 1
    assert joined.seat_joined.seat.occupant == table_pb2.OCCUPANT_KIND_BOT
    assert wire.seat_left_event(2).seat_left.seat == 2
    with pytest.raises(ValueError):
        wire.match_started_event(rec)
    state = engine.new_match(rules, 5)
    rec.state = state
    started = wire.match_started_event(rec).match_started
    assert started.first_dealer == state.dealer
    assert len(started.seats) == 4
    assert started.rules == wire.rules_to_proto("parejas", rules)
    # The first dealer survives later hands (the dealer moves one seat per hand).
    rec.state = state._replace(hand_no=3, dealer=(state.dealer + 2) % 4)
    assert wire.match_started_event(rec).match_started.first_dealer == state.dealer

    turn = wire.turn_started_event(state, 1_700_000_030.5).turn_started
    assert turn.seat == state.turn and turn.trick_number == 1
    assert turn.kind == table_pb2.TURN_KIND_LEAD
    assert turn.deadline.seconds == 1_700_000_030 and turn.deadline.nanos == 500_000_000
    after, _ = engine.apply(state, state.turn, engine.legal_actions(state, state.turn)[0])
    turn_ev = wire.turn_started_event(after, 0)
    turn = turn_ev.turn_started
    assert turn.kind == table_pb2.TURN_KIND_FOLLOW and not turn.HasField("deadline")
    for ev in (joined, turn_ev):
        assert ev.sequence == 0 and ev.table_version == 0 and not ev.HasField("time")


# ---------------------------------------------------------------------------------------------
# Views
# ---------------------------------------------------------------------------------------------


def test_view_before_the_match() -> None:
    rules = Rules.preset("corriente-8")
    rec = make_record(None, rules, "corriente-8", visibility=PRIVATE)
    spectator = wire.view_to_proto(rec, None)
    assert not spectator.HasField("my_seat") and spectator.invite_code == ""
    assert spectator.status == table_pb2.TABLE_STATUS_WAITING
    assert spectator.version == 9 and spectator.last_event_sequence == 17
    assert spectator.rules == wire.rules_to_proto("corriente-8", rules)
    assert len(spectator.seats) == 2 and not spectator.seat_hands
    assert not spectator.HasField("current_trick") and not spectator.HasField("match_result")
    assert spectator.trump_suit == card_pb2.SUIT_UNSPECIFIED
    seated = wire.view_to_proto(rec, 1)
    assert seated.my_seat == 1 and seated.invite_code == "CODE42"
    public = make_record(None, rules, "corriente-8")
    assert wire.view_to_proto(public, 0).invite_code == ""


def same_view_as_bytes(record: TableRecord, seats: Sequence[int | None]) -> None:
    """The bytes ``GetTable`` sends parse as the message ``view_to_proto`` builds."""
    for seat in seats:
        got = view_pb2.TableView.FromString(wire.view_bytes(record, seat))
        assert got == wire.view_to_proto(record, seat), seat


def test_view_bytes_of_waiting_tables_bots_and_connections() -> None:
    """Who sits where and who is connected reach the bytes (and a change of either is not
    answered from an earlier table's parts); a private code goes to seated callers only."""
    rules = Rules.preset("parejas")
    rec = make_record(None, rules, "parejas", visibility=PRIVATE)
    same_view_as_bytes(rec, [None, 0, 3])
    rec.seats[1] = SeatInfo(BOT, "Bot 1", "", "hard")
    rec.seats[2].player_id = "player-2"
    same_view_as_bytes(rec, [None, 2])
    rec.connected = frozenset({0, 2})
    same_view_as_bytes(rec, [None, 0])
    rec.seats[0].name = "renamed"
    assert wire.view_to_proto(rec, 0).seats[0].display_name == "renamed"
    same_view_as_bytes(rec, [0])
    other = make_record(None, Rules.preset("tres"), "tres")
    other.table_id = "t-2"
    same_view_as_bytes(other, [None, 1])


def test_view_bytes_mark_cards_played_on_timeout_and_deadlines() -> None:
    rules = Rules.preset("parejas", first_dealer=0)
    s = engine.new_match(rules, 5)
    auto = 0
    for i in range(7):
        if i % 3 == 1:
            s, events = engine.apply(s, s.turn, engine.TIMEOUT)
            auto |= 1 << next(e.card for e in events if isinstance(e, engine.events.CardPlayed))
        else:
            s, _ = engine.apply(s, s.turn, engine.legal_actions(s, s.turn)[0])
    record = make_record(s, rules, "parejas", deadline=1_700_000_123.456789)
    same_view_as_bytes(record, [None, 0, 1, 2, 3])
    record.auto_played = auto
    same_view_as_bytes(record, [None, 0, 1, 2, 3])
    assert any(
        p.timed_out
        for p in view_pb2.TableView.FromString(wire.view_bytes(record, None))
        .completed_tricks[0]
        .cards
    )


def test_view_hand_sorted_by_suit_then_strength() -> None:
    rules = Rules(players=4, first_dealer=3)
    hands = [
        "2O 12O 1O 3O 10C 1C 4E 3E 11B 12B",
        "4O 5O 6O 7O 2C 3C 4C 5C 6C 7C",
        "10O 11O 11C 12C 1E 2E 5E 6E 7E 10E",
        "11E 12E 1B 2B 3B 4B 5B 6B 7B 10B",
    ]
    deck = [0] * 40
    per_seat = [[parse_card(t) for t in h.split()] for h in hands]
    for i in range(40):
        deck[i] = per_seat[i % 4][i // 4]
    state = engine.new_match(rules, 1, decks=[deck])
    rec = make_record(state, rules, deadline=1_700_000_100.0)
    v = wire.view_to_proto(rec, 0)
    text = [f"{c.rank}{'OCEB'[c.suit - 1]}" for c in v.hand]
    assert text == ["1O", "3O", "12O", "2O", "1C", "10C", "3E", "4E", "12B", "11B"]
    assert [wire.action_from_proto(a) for a in v.legal_actions] == list(
        engine.legal_actions(state, 0)
    )
    assert v.turn_seat == 0 and v.turn_kind == table_pb2.TURN_KIND_LEAD
    assert v.turn_deadline.seconds == 1_700_000_100
    assert v.current_trick.number == 1 and v.current_trick.leader == 0
    assert not v.current_trick.cards and not v.current_trick.HasField("winner")
    # The dealer (seat 3) holds the trump card 10B, public to all.
    assert v.trump_suit == card_pb2.SUIT_BASTOS
    assert v.trump_card == wire.card_to_proto(parse_card("10B"))
    assert [wire.card_from_proto(c) for c in v.seat_hands[3].public_cards] == [parse_card("10B")]
    assert [sh.hand_size for sh in v.seat_hands] == [10, 10, 10, 10]
    assert not v.HasField("turned_card") and v.stock_size == 0
    # Other seats: no legal actions, their own hand.
    v1 = wire.view_to_proto(rec, 1)
    assert not v1.legal_actions and mask([wire.card_from_proto(c) for c in v1.hand]) == (
        parse_cards(hands[1])
    )


# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------


def test_hand_dealt_variants() -> None:
    rules = Rules.preset("corriente-6")
    state = engine.new_match(rules, 3)
    (variants,) = wire.engine_events_to_proto(state.rules, engine.opening_events(state))
    public = variants.public.hand_dealt
    assert not public.hand
    assert list(public.hand_sizes) == [6, 6] and public.stock_size == 28
    assert public.dealer == state.dealer and public.hand_number == 1 and public.game_number == 1
    assert wire.card_from_proto(public.trump_card) == state.trump_card
    assert set(variants.private) == {0, 1}
    for seat in (0, 1):
        mine = variants.for_seat(seat).hand_dealt
        assert mask([wire.card_from_proto(c) for c in mine.hand]) == state.hands[seat]
        mine_copy = event_pb2.HandDealt()
        mine_copy.CopyFrom(mine)
        del mine_copy.hand[:]
        assert mine_copy == public
    assert variants.for_seat(None) is variants.public


def _first_draw(rules: Rules, seed: int) -> tuple[State, State, list[EventVariants]]:
    state = engine.new_match(rules, seed)
    while True:
        before = state
        state, events = engine.apply(state, state.turn, engine.legal_actions(state, state.turn)[0])
        if any(type(e).__name__ == "CardDrawn" for e in events):
            return before, state, wire.engine_events_to_proto(before.rules, events)


def test_card_drawn_variants() -> None:
    before, after, variants = _first_draw(Rules.preset("corriente-8"), 11)
    kinds = [kind(v.public) for v in variants]
    assert kinds == ["card_played", "trick_taken", "card_drawn", "card_drawn"]
    trick = variants[1].public.trick_taken
    assert trick.trick.number == 1 and not trick.last_trick
    assert trick.winner_side == trick.trick.winner
    winner = trick.trick.winner
    for v, drawer, card in (
        (variants[2], winner, before.stock[0]),
        (variants[3], 1 - winner, before.stock[1]),
    ):
        drawn = v.public.card_drawn
        assert drawn.seat == drawer and not drawn.HasField("card") and not drawn.turned_card
        assert set(v.private) == {drawer}
        assert wire.card_from_proto(v.private[drawer].card_drawn.card) == card
        assert v.for_seat(1 - drawer) is v.public
    assert variants[3].public.card_drawn.stock_size == len(after.stock)


def test_final_draw_turned_card_is_public() -> None:
    rules = Rules.preset("corriente-8")
    state = engine.new_match(rules, 4)
    while True:
        before = state
        state, events = engine.apply(state, state.turn, engine.legal_actions(state, state.turn)[0])
        if before.stock and not state.stock:
            break
    variants = wire.engine_events_to_proto(before.rules, events)
    last = variants[-1]
    drawn = last.public.card_drawn
    assert drawn.turned_card and drawn.stock_size == 0 and not last.private
    assert wire.card_from_proto(drawn.card) == before.stock[-1]


def _tute_deck(rules: Rules) -> list[int]:
    """4p, dealer 3: seat 0 (mano) holds the four reyes and the ace of trumps (oros)."""
    assert rules.players == 4 and rules.first_dealer == 3
    seat0 = parse_cards("12O 12C 12E 12B 1O 3O 1C 1E 1B 3C")
    trump = parse_card("7O")
    rest = [c for c in range(40) if not (seat0 >> c & 1) and c != trump]
    hands = [
        [c for c in range(40) if seat0 >> c & 1],
        rest[0:10],
        rest[10:20],
        [*rest[20:29], trump],
    ]
    return [hands[i % 4][i // 4] for i in range(40)]


@pytest.mark.parametrize(
    ("preset", "overrides", "ends_match"),
    [
        ("parejas", {}, True),  # points, wins_unit, 1 game: the tute wins the game and match
        ("parejas", {"games_to_win": 2}, False),  # the game only
        ("parejas-manos", {}, True),  # wins_match
        # hands system, wins_unit: worth 2 match points of 3
        ("parejas-manos", {"tute_effect": "wins_unit", "tute_unit_value": 2}, False),
        ("parejas-mejor-de-3", {"tute_unit_value": 2}, True),  # 2 of 2 match points
    ],
)
def test_tute_events(preset: str, overrides: dict[str, Any], ends_match: bool) -> None:
    rules = Rules.preset(preset, first_dealer=3, **overrides)
    state = engine.new_match(rules, 1, decks=[_tute_deck(rules)])
    state, _ = engine.apply(state, 0, parse_card("1O"))
    for _ in range(3):
        state, _ = engine.apply(state, state.turn, engine.legal_actions(state, state.turn)[0])
    assert state.leader == 0 and TUTE_12 in engine.legal_actions(state, 0)
    before = state
    after, events = engine.apply(state, 0, TUTE_12)
    variants = wire.engine_events_to_proto(before.rules, events)
    kinds = [kind(v.public) for v in variants]
    expected = ["tute_declared", "hand_scored"]
    if rules.scoring is Scoring.POINTS:
        expected.append("game_ended")
    expected.append("match_ended" if ends_match else "hand_dealt")
    assert kinds == expected
    tute = variants[0].public.tute_declared.tute
    assert (tute.seat, tute.side, tute.rank, tute.trick_number) == (0, 0, 12, 2)
    assert mask([wire.card_from_proto(c) for c in tute.cards]) == parse_cards("12O 12C 12E 12B")
    scored = variants[1].public.hand_scored
    assert scored.result.tute == tute
    assert not scored.result.totals and not scored.result.capote
    assert scored.result.HasField("winner_side") and scored.result.winner_side == 0
    awarded = scored.result.match_points_awarded
    if rules.scoring is Scoring.HANDS and rules.tute_effect is TuteEffect.WINS_UNIT:
        assert awarded == 2 and [s.match_points for s in scored.scores] == [2, 0]
    else:
        assert awarded == 0
    if rules.scoring is Scoring.POINTS:
        game = variants[2].public.game_ended.result
        assert game.by_tute and game.winner_side == 0 and game.game_number == 1
        assert [s.games_won for s in scored.scores] == [1, 0]
        assert [s.game_score for s in scored.scores] == list(game.scores)
    if ends_match:
        result = variants[-1].public.match_ended.result
        assert result.reason == score_pb2.MATCH_END_REASON_TUTE
        assert list(result.winner_sides) == [0] and list(result.winner_seats) == [0, 2]
        assert not result.HasField("forfeited_seat")
        # The view of the finished table tells the same.
        rec = make_record(after, rules, preset)
        view = wire.view_to_proto(rec, None)
        assert view.match_result == result
        assert view.last_hand_result == scored.result
        assert not view.HasField("turn_seat") and not view.legal_actions
    else:
        rec = make_record(after, rules, preset)
        view = wire.view_to_proto(rec, 1)
        # After the next deal the cantes and the tute's trick number are gone from the state.
        assert view.last_hand_result.tute.cards == tute.cards
        assert view.last_hand_result.game_number == 1
        assert view.last_hand_result.match_points_awarded == awarded


def test_forfeit_events_and_view() -> None:
    rules = Rules.preset("tres")
    state = engine.new_match(rules, 8)
    before = state
    after, events = engine.apply(state, 1, FORFEIT)
    variants = wire.engine_events_to_proto(
        before.rules, events, forfeit_reason=event_pb2.FORFEIT_REASON_DISCONNECTED
    )
    assert [kind(v.public) for v in variants] == ["player_forfeited", "match_ended"]
    forfeited = variants[0].public.player_forfeited
    assert forfeited.seat == 1 and forfeited.reason == event_pb2.FORFEIT_REASON_DISCONNECTED
    default = wire.engine_events_to_proto(before.rules, events)[0].public
    assert default.player_forfeited.reason == event_pb2.FORFEIT_REASON_LEFT
    result = variants[1].public.match_ended.result
    assert result.reason == score_pb2.MATCH_END_REASON_FORFEIT
    assert list(result.winner_sides) == [0, 2] and list(result.winner_seats) == [0, 2]
    assert result.forfeited_seat == 1
    assert [s.side for s in result.scores] == [0, 1, 2]
    view = wire.view_to_proto(make_record(after, rules, "tres", forfeited=1), 0)
    assert view.match_result == result
    assert not view.HasField("turn_seat") and view.turn_kind == table_pb2.TURN_KIND_UNSPECIFIED
    assert not view.HasField("last_hand_result")


def test_timeout_events_flag_the_card() -> None:
    rules = Rules.preset("parejas")
    state = engine.new_match(rules, 2)
    for _ in range(3):
        state, _ = engine.apply(state, state.turn, engine.legal_actions(state, state.turn)[0])
    before = state
    _after, events = engine.apply(state, state.turn, TIMEOUT)
    variants = wire.engine_events_to_proto(before.rules, events)
    assert [kind(v.public) for v in variants] == ["turn_timed_out", "card_played", "trick_taken"]
    assert variants[0].public.turn_timed_out.seat == before.turn
    assert variants[0].public.turn_timed_out.trick_number == 1
    played = variants[1].public.card_played
    assert played.timed_out and played.trick_number == 1 and played.seat == before.turn
    cards = variants[2].public.trick_taken.trick.cards
    assert [c.timed_out for c in cards] == [False, False, False, True]
    assert [c.seat for c in cards] == [(before.leader + i) % 4 for i in range(4)]


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_scores_of_hand_and_match_ends_carry_the_hands_tally(preset: str) -> None:
    """HandScored.scores and MatchEnded.result.scores fill the hand_* fields with the tally of
    the hand that ended (a forfeit's included), as the events before them tell it; the
    finished table's view shows the same."""
    rules = Rules.preset(preset, target_points=120, target_match_points=3)
    reasons: set[str] = set()
    checked = 0
    for seed in range(12):
        tally = HandTally(rules.players)
        forfeit_at = 30 + seed if seed % 3 == 0 else None
        for before, after, events in random_match(rules, seed, forfeit_at):  # noqa: B007 (the last after is read below)
            for v in wire.engine_events_to_proto(before.rules, events):
                tally.see(round_trip(v.public))
        assert after.over
        checked += tally.checked
        reasons.add(after.end_reason)
        view = wire.view_to_proto(make_record(after, rules, preset), None)
        tally.check(view.match_result.scores, "the final view's match_result")
        tally.check(view.scores, "the final view's scores")
    assert {"forfeit", "score"} <= reasons, reasons
    assert checked >= 12 + 8  # every MatchEnded, and most matches score hands first


def test_a_tute_hands_scores_carry_its_tally() -> None:
    """A hand ended by a tute counts no totals, but its tally says what was won before it."""
    for games_to_win, ends_match in ((1, True), (2, False)):
        rules = Rules.preset("parejas", first_dealer=3, games_to_win=games_to_win)
        state = engine.new_match(rules, 1, decks=[_tute_deck(rules)])
        tally = HandTally(4)
        steps = [(0, parse_card("1O"))] + [(-1, -1)] * 3 + [(0, TUTE_12)]
        for seat, action in steps:
            if seat < 0:
                seat, action = state.turn, engine.legal_actions(state, state.turn)[0]
            before = state
            state, events = engine.apply(state, seat, action)
            for v in wire.engine_events_to_proto(before.rules, events):
                tally.see(round_trip(v.public))
        assert tally.checked == (2 if ends_match else 1)
        # the first trick (1O led, worth 11 or more) was won before the tute
        assert sum(p for p, _, _ in tally.last) >= 11 and sum(t for _, _, t in tally.last) == 1
        assert state.over == ends_match


# ---------------------------------------------------------------------------------------------
# The invariant: random matches, every audience, no card it may not see
# ---------------------------------------------------------------------------------------------

MIXES: list[tuple[str, dict[str, Any]]] = [(p, {}) for p in PRESET_NAMES] + [
    (
        "parejas",
        {
            "cante_singers": "side",
            "cantes_per_trick": "unlimited",
            "games_to_win": 2,
            "target_points": 60,
        },
    ),
    (
        "corriente-8",
        {
            "swap_two_for_low": True,
            "swap_requires_trick_won": False,
            "stock_phase_rules": "trump_lead",
            "forty_before_twenty": "off",
        },
    ),
    (
        "corriente-6",
        {"scoring": "points", "target_points": 40, "games_to_win": 3, "tie_rule": "none"},
    ),
    ("tres", {"scoring": "points", "target_points": 50, "games_to_win": 2}),
]


def random_match(
    rules: Rules, seed: int, forfeit_at: int | None
) -> Iterator[tuple[State, State, tuple[engine.Event, ...]]]:
    """Every step of a random match: (before, after, events); declarations are preferred."""
    rng = random.Random(seed)
    state = engine.new_match(rules, rng)
    yield state, state, engine.opening_events(state)
    step = 0
    while not state.over:
        step += 1
        actors = [s for s in range(rules.players) if engine.legal_actions(state, s)]
        seat = rng.choice(actors)
        legal = engine.legal_actions(state, seat)
        declarations = [a for a in legal if a >= 40]
        if forfeit_at is not None and step == forfeit_at:
            seat, action = rng.randrange(rules.players), FORFEIT
        elif declarations and rng.random() < 0.8:
            action = rng.choice(declarations)
        elif seat == state.turn and rng.random() < 0.1:
            seat, action = state.turn, TIMEOUT
        else:
            action = rng.choice([a for a in legal if a < 40] or legal)
        before = state
        state, events = engine.apply(state, seat, action)
        yield before, state, events


def check_batch(
    before: State,
    after: State,
    events: tuple[engine.Event, ...],
    variants: list[EventVariants],
    hand_games: dict[int, int],
) -> None:
    rules = before.rules
    n = rules.players
    assert len(variants) == len(events)
    # What everybody may see in this batch.
    common = table_cards(before) | table_cards(after)
    for ev in events:
        if isinstance(ev, CardPlayed):
            common |= 1 << ev.card
        elif isinstance(ev, TuteDeclared):
            common |= ev.cards
    for seat in [*range(n), None]:
        own = 0 if seat is None else before.hands[seat] | after.hands[seat]
        for v, ev in zip(variants, events, strict=True):
            if seat is not None:
                assert set(v.private) <= set(range(n))
            msg = round_trip(v.for_seat(seat))
            assert msg.sequence == 0 and not msg.HasField("time")
            shown = mask(cards_in(msg))
            assert shown & ~(common | own) == 0, (seat, type(ev).__name__, msg)
            assert shown & ~engine.visible_cards(engine.redact(ev, seat)) == 0 or isinstance(
                ev, HandEnded
            ), (seat, msg)
    # Content checks.
    game_ended = next((e for e in events if isinstance(e, GameEnded)), None)
    for v, ev in zip(variants, events, strict=True):
        if isinstance(ev, HandEnded):
            res = ev.result
            scored = v.public.hand_scored
            hand_games[res.hand_no] = scored.result.game_number
            assert scored.result.game_number == before.game_no
            assert scored.result.hand_number == res.hand_no
            if res.winner >= 0:
                awarded = after.match_points[res.winner] - before.match_points[res.winner]
            else:
                awarded = 0
            assert scored.result.match_points_awarded == awarded
            assert scored.result.HasField("winner_side") == (res.winner >= 0)
            if res.tute_seat < 0:
                totals = scored.result.totals
                assert sum(t.card_points + t.last_trick_points for t in totals) == 130
                assert sum(t.tricks_won for t in totals) == rules.tricks_per_hand
                assert [t.total for t in totals] == list(res.totals)
                assert sum(t.cante_points for t in totals) == sum(
                    c.points for c in scored.result.cantes
                )
            scores = game_ended.scores if game_ended else after.game_scores
            assert [s.game_score for s in scored.scores] == list(scores)
            assert [s.match_points for s in scored.scores] == list(after.match_points)
            assert [s.games_won for s in scored.scores] == list(after.games_won)
        elif isinstance(ev, MatchEnded):
            result = v.public.match_ended.result
            assert list(result.winner_sides) == list(ev.winners)
            forfeit = next((e.seat for e in events if isinstance(e, PlayerForfeited)), None)
            assert result.HasField("forfeited_seat") == (forfeit is not None)


def _cante_cards(cantes: tuple[tuple[int, int, int, int], ...]) -> int:
    m = 0
    for _, suit, _, _ in cantes:
        m |= 1 << engine.cards.card_of(suit, 12) | 1 << engine.cards.card_of(suit, 11)
    return m


def check_view(record: TableRecord, seat: int | None, hand_games: dict[int, int]) -> None:
    state = record.state
    assert state is not None
    view: view_pb2.TableView = round_trip(wire.view_to_proto(record, seat))
    # The bytes the hot path sends are the same message.
    assert view_pb2.TableView.FromString(wire.view_bytes(record, seat)) == view
    allowed = table_cards(state) | (0 if seat is None else state.hands[seat])
    current = view_pb2.TableView()
    current.CopyFrom(view)
    previous = (
        current.last_hand_result
        if state.last_result is not None and (state.last_result.hand_no != state.hand_no)
        else None
    )
    if previous is not None:
        assert state.last_result is not None
        # The previous deal's result shows what was public then (its cantes and tute); those
        # cards are dealt again in the current hand, so they are checked against that deal.
        assert (
            mask(cards_in(previous))
            & ~(state.last_result.tute_cards | _cante_cards(state.last_result.cantes))
            == 0
        )
        current.ClearField("last_hand_result")
    shown = mask(cards_in(current))
    assert shown & ~allowed == 0, (seat, view)
    n = state.rules.players
    if seat is None:
        assert not view.hand and not view.legal_actions and not view.HasField("my_seat")
    else:
        assert view.my_seat == seat
        hand = [wire.card_from_proto(c) for c in view.hand]
        assert mask(hand) == state.hands[seat] and len(hand) == state.hands[seat].bit_count()
        assert [wire.action_from_proto(a) for a in view.legal_actions] == list(
            engine.legal_actions(state, seat)
        )
    for s, sh in enumerate(view.seat_hands):
        assert sh.seat == s and sh.hand_size == state.hands[s].bit_count()
        assert mask([wire.card_from_proto(c) for c in sh.public_cards]) == (
            state.hands[s] & state.public
        )
    assert len(view.seat_hands) == n
    assert sum(sh.tricks_won for sh in view.seat_hands) == len(state.history)
    assert [s.hand_tricks_won for s in view.scores] == list(state.tricks_won)
    assert [s.hand_card_points for s in view.scores] == list(state.won_points)
    assert len(view.completed_tricks) == len(state.history)
    for i, t in enumerate(view.completed_tricks):
        leader, cards, winner = state.history[i]
        assert (t.number, t.leader, t.winner) == (i + 1, leader, winner)
        assert [wire.card_from_proto(p.card) for p in t.cards] == list(cards)
        assert t.points == sum(POINTS[c] for c in cards)
    assert view.stock_size == len(state.stock)
    assert view.HasField("turned_card") == bool(state.stock)
    if state.over:
        assert view.HasField("match_result") and not view.HasField("turn_seat")
        assert list(view.match_result.winner_sides) == list(state.winners)
    else:
        assert view.turn_seat == state.turn and not view.HasField("match_result")
        assert [c.seat for c in view.current_trick.cards] == [
            (state.leader + i) % n for i in range(len(state.trick))
        ]
    if state.last_result is not None:
        res = view.last_hand_result
        assert res.hand_number == state.last_result.hand_no
        assert res.game_number == hand_games[state.last_result.hand_no]
    assert len(view.game_results) == len(record.games)


@pytest.mark.parametrize(("preset", "overrides"), MIXES, ids=[f"{p}{o}" for p, o in MIXES])
def test_no_hidden_card_in_views_or_events(preset: str, overrides: dict[str, Any]) -> None:
    rules = Rules.preset(preset, **overrides)
    kinds_seen: set[str] = set()
    for seed in range(5):
        games: list[GameRecord] = []
        hand_games: dict[int, int] = {}
        forfeit_at = 37 if seed == 4 else None
        for before, after, events in random_match(rules, seed, forfeit_at):
            variants = wire.engine_events_to_proto(before.rules, events)
            kinds_seen.update(kind(v.public) for v in variants)
            check_batch(before, after, events, variants, hand_games)
            for ev in events:
                if isinstance(ev, GameEnded):
                    by_tute = any(isinstance(e, TuteDeclared) for e in events)
                    games.append(GameRecord(ev.game_no, ev.winner, ev.scores, by_tute))
            forfeited = next((e.seat for e in events if isinstance(e, PlayerForfeited)), -1)
            record = make_record(
                after,
                rules,
                preset,
                games=list(games),
                forfeited=forfeited,
                visibility=PRIVATE,
                deadline=1_700_000_000.0,
            )
            for seat in [*range(rules.players), None]:
                check_view(record, seat, hand_games)
    assert {
        "hand_dealt",
        "card_played",
        "trick_taken",
        "hand_scored",
        "match_ended",
        "player_forfeited",
        "turn_timed_out",
    } <= kinds_seen
    if rules.players == 2:
        assert "card_drawn" in kinds_seen


def test_cante_events_and_view() -> None:
    """A random 2p match until a cante: the event and the view agree, the cards are the pair."""
    rules = Rules.preset("corriente-8")
    for before, after, events in random_match(rules, 7, None):
        variants = wire.engine_events_to_proto(before.rules, events)
        if kind(variants[0].public) != "cante_sung":
            continue
        cante = variants[0].public.cante_sung.cante
        seat, suit, points, trick_no = after.cantes[-1]
        assert (cante.seat, cante.side, cante.points, cante.trick_number) == (
            seat,
            seat,
            points,
            trick_no,
        )
        assert cante.suit == wire.suit_to_proto(suit)
        assert [wire.card_from_proto(c) for c in cante.cards] == [
            card_of(suit, 12),
            card_of(suit, 11),
        ]
        view = wire.view_to_proto(make_record(after, rules), None)
        assert view.cantes[-1] == cante
        assert view.scores[seat].hand_cante_points == sum(
            c[2] for c in after.cantes if c[0] == seat
        )
        return
    pytest.fail("no cante in the match")


def test_exchange_event() -> None:
    rules = Rules.preset("corriente-8", swap_requires_trick_won=False, swap_two_for_low=True)
    for seed in range(200):
        state = engine.new_match(rules, seed)
        if EXCHANGE in engine.legal_actions(state, state.turn):
            break
    else:
        pytest.fail("no exchange possible at the opening lead")
    after, events = engine.apply(state, state.turn, EXCHANGE)
    (v,) = wire.engine_events_to_proto(state.rules, events)
    ex = v.public.trump_exchanged
    assert ex.seat == state.turn and not v.private
    assert wire.card_from_proto(ex.taken) == state.stock[-1]
    assert wire.card_from_proto(ex.given) == after.stock[-1]
    view = wire.view_to_proto(make_record(after, rules), 1 - state.turn)
    assert view.turned_card == ex.given
    assert ex.taken in view.seat_hands[state.turn].public_cards


def test_last_hand_result_game_number_after_a_game_ended() -> None:
    """The hand that ended game 1 is reported as game 1 while game 2 is played, and still
    after a forfeit cuts game 2's first hand."""
    rules = Rules.preset("corriente-6", target_points=30, games_to_win=3)
    rng = random.Random(5)
    state = engine.new_match(rules, rng)
    while state.game_no == 1:
        legal = engine.legal_actions(state, state.turn)
        state, _ = engine.apply(state, state.turn, rng.choice([a for a in legal if a < 40]))
    assert state.last_result is not None and not state.over
    view = wire.view_to_proto(make_record(state, rules), 0)
    assert view.game_number == 2 and view.last_hand_result.game_number == 1
    after, _ = engine.apply(state, 1, FORFEIT)
    view = wire.view_to_proto(make_record(after, rules, forfeited=1), None)
    assert view.game_number == 2 and view.last_hand_result.game_number == 1
    assert view.match_result.forfeited_seat == 1
    assert view.status == table_pb2.TABLE_STATUS_FINISHED


def test_views_mark_the_cards_the_server_played_on_timeout() -> None:
    rules = Rules.preset("parejas", first_dealer=0)
    s = engine.new_match(rules, 3)
    auto = 0
    for i in range(6):  # one complete trick and two cards of the next, every other by timeout
        if i % 2:
            s, events = engine.apply(s, s.turn, engine.TIMEOUT)
            auto |= 1 << next(e.card for e in events if isinstance(e, engine.events.CardPlayed))
        else:
            s, _ = engine.apply(s, s.turn, engine.legal_actions(s, s.turn)[0])
    record = make_record(s, rules, "parejas")
    record.auto_played = auto
    view = wire.view_to_proto(record, None)
    shown = [p for t in view.completed_tricks for p in t.cards] + list(view.current_trick.cards)
    assert len(shown) == 6
    assert [p.timed_out for p in shown] == [False, True, False, True, False, True]
    assert view.completed_tricks[0].cards[1].timed_out
