"""All protobuf conversion of the server, in one module: requests in, views and events out.

Direction and promises:

- **In** (``*_from_proto``): request content to engine values. Malformed content raises
  :class:`BadField` naming the field by its path in the request (``rules.options.players``,
  ``action.play_card.rank``); the interceptor turns it into INVALID_ARGUMENT with a
  ``google.rpc.BadRequest``. Nothing here judges legality: a well-formed card the seat does
  not hold is the engine's business (FAILED_PRECONDITION).
- **Out** (``*_to_proto``, the event builders): engine values and table records to the
  messages of ``protos/tute/v1``. Cards only ever come from :func:`engine.view` (views) or
  :func:`engine.redact` (events), so a caller never receives a card it may not see.

Events are converted **once per audience**: :func:`engine_events_to_proto` returns, per engine
event, an :class:`EventVariants` with the public message (spectators, and every seat without a
variant of its own) and the private replacements (a seat's own dealt hand, its own drawn card).
Fan-out then picks a message per watcher and never converts or redacts again.

Hands and public held cards are sorted by suit (oros, copas, espadas, bastos) then by strength,
strongest first (1, 3, 12, 11, 10, 7, 6, 5, 4, 2).

Scores (``SideScore``): in views they carry the current hand's figures (``hand_*``); in events
(``HandScored.scores``, ``MatchResult.scores``) only the standing (game score, games won, match
points) is set and the ``hand_*`` fields are 0: the hand's own figures are in its
``HandResult``. ``TableView.match_result`` is built by the same function as the event's, so a
frontend sees the same message either way.

Performance (this is the hot path: one view per submission and watcher snapshot, one
conversion per event): the 40 ``Card`` messages, the ``Action`` messages, the effective rules
of each (preset, rules) pair and the completed tricks views show are built once and copied
into outgoing messages (upb copies a small message in well under a microsecond). A 4-player
view mid-hand takes about 25 µs.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from google.protobuf import timestamp_pb2

import engine
from engine.cards import ALL_CARDS, POINTS, RANK_OF, RANKS, STRENGTH, SUIT_OF, card_of, cards_of
from engine.events import (
    CanteSung,
    CardDrawn,
    CardPlayed,
    GameEnded,
    HandDealt,
    HandEnded,
    HandResult,
    MatchEnded,
    PlayerForfeited,
    TrickTaken,
    TrumpExchanged,
    TurnTimedOut,
    TuteDeclared,
)
from engine.rules import Scoring, TuteEffect
from engine.state import PLAYING as _ENGINE_PLAYING
from service.model import (
    BOT,
    EMPTY,
    FINISHED,
    HUMAN,
    PLAYING,
    PRIVATE,
    PUBLIC,
    WAITING,
    TableRecord,
)
from service.reasons import Reason, from_engine
from tute.v1 import (
    action_pb2,
    card_pb2,
    event_pb2,
    rules_pb2,
    score_pb2,
    table_pb2,
    view_pb2,
)

__all__ = [
    "BadField",
    "EventVariants",
    "action_from_proto",
    "action_to_proto",
    "card_from_proto",
    "card_to_proto",
    "engine_events_to_proto",
    "match_started_event",
    "rules_from_proto",
    "rules_to_proto",
    "seat_joined_event",
    "seat_left_event",
    "side_of",
    "suit_from_proto",
    "suit_to_proto",
    "table_to_proto",
    "turn_started_event",
    "turn_started_variants",
    "view_to_proto",
]


class BadField(Exception):
    """Malformed request content. ``field`` is its path in the request, such as
    ``rules.options.players`` or ``action.play_card.rank``; ``description`` says what is
    wrong (it never names a hidden card); ``reason`` is the ErrorInfo reason to send."""

    def __init__(
        self, field: str, description: str, reason: Reason = Reason.INVALID_ARGUMENT
    ) -> None:
        super().__init__(f"{field}: {description}")
        self.field = field
        self.description = description
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Seats and sides
# ---------------------------------------------------------------------------------------------

_SIDE: dict[int, tuple[int, ...]] = {
    n: tuple(s % 2 if n == 4 else s for s in range(n)) for n in (2, 3, 4)
}
_SIDE_SEATS: dict[int, tuple[tuple[int, ...], ...]] = {
    2: ((0,), (1,)),
    3: ((0,), (1,), (2,)),
    4: ((0, 2), (1, 3)),
}


def side_of(players: int, seat: int) -> int:
    """The side of ``seat``: ``seat % 2`` with 4 players, the seat itself otherwise."""
    return seat % 2 if players == 4 else seat


# ---------------------------------------------------------------------------------------------
# Suits and cards
# ---------------------------------------------------------------------------------------------

_SUIT_PROTO: tuple[card_pb2.Suit, ...] = (
    card_pb2.SUIT_OROS,
    card_pb2.SUIT_COPAS,
    card_pb2.SUIT_ESPADAS,
    card_pb2.SUIT_BASTOS,
)
_RANK_INDEX: dict[int, int] = {rank: i for i, rank in enumerate(RANKS)}

_CARD: tuple[card_pb2.Card, ...] = tuple(
    card_pb2.Card(suit=_SUIT_PROTO[SUIT_OF[c]], rank=RANK_OF[c]) for c in ALL_CARDS
)
"""The 40 cards as messages: shared, never mutated, copied into outgoing messages."""

# Mask -> cards sorted by suit then strength (strongest first), by 10-bit chunks of one suit.
_SORTED_CHUNK: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(
        tuple(
            sorted(
                (s * 10 + i for i in range(10) if m >> i & 1),
                key=lambda c: -STRENGTH[c],
            )
        )
        for m in range(1024)
    )
    for s in range(4)
)


def _sorted_cards(mask: int) -> tuple[int, ...]:
    """The cards of a mask by suit (O C E B), strongest first inside a suit."""
    return (
        _SORTED_CHUNK[0][mask & 0x3FF]
        + _SORTED_CHUNK[1][(mask >> 10) & 0x3FF]
        + _SORTED_CHUNK[2][(mask >> 20) & 0x3FF]
        + _SORTED_CHUNK[3][mask >> 30]
    )


def _card_msgs(cards: Iterable[int]) -> list[card_pb2.Card]:
    return [_CARD[c] for c in cards]


_PAIR_MSGS: tuple[tuple[card_pb2.Card, card_pb2.Card], ...] = tuple(
    (_CARD[card_of(s, 12)], _CARD[card_of(s, 11)]) for s in range(4)
)
"""Per suit: the 12 and the 11, the cards a cante shows."""


def suit_to_proto(suit: int) -> card_pb2.Suit:
    """The wire suit of an engine suit (0..3 = oros, copas, espadas, bastos)."""
    return _SUIT_PROTO[suit]


def suit_from_proto(value: int, field: str = "suit") -> int:
    """The engine suit of a wire suit; :class:`BadField` for unspecified or unknown values."""
    if 1 <= value <= 4:
        return value - 1
    if value == card_pb2.SUIT_UNSPECIFIED:
        raise BadField(field, "the suit is not set")
    raise BadField(field, f"unknown suit {value}")


def card_to_proto(card: int) -> card_pb2.Card:
    """A new ``Card`` message for an engine card (0..39)."""
    out = card_pb2.Card()
    out.CopyFrom(_CARD[card])
    return out


def card_from_proto(msg: card_pb2.Card, field: str = "card") -> int:
    """The engine card (0..39) of a ``Card``; :class:`BadField` naming ``<field>.suit`` or
    ``<field>.rank`` when malformed."""
    suit = suit_from_proto(msg.suit, f"{field}.suit")
    index = _RANK_INDEX.get(msg.rank)
    if index is None:
        raise BadField(f"{field}.rank", "the rank must be 1-7, 10, 11 or 12")
    return suit * 10 + index


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------

_DEFAULT_RULES = engine.Rules()
_OPTION_FIELDS = rules_pb2.RuleOptions.DESCRIPTOR.fields


def _enum_tables() -> tuple[dict[str, dict[int, enum.Enum]], dict[str, dict[enum.Enum, int]]]:
    """Per enum option: wire number -> engine member and back, matched by name.

    ``STOCK_PHASE_RULES_TRUMP_LEAD`` is the engine's ``StockPhaseRules.TRUMP_LEAD`` (value
    ``trump_lead``): the wire name is the enum's prefix plus the engine value upper-cased.
    """
    from_proto: dict[str, dict[int, enum.Enum]] = {}
    to_proto: dict[str, dict[enum.Enum, int]] = {}
    for fd in _OPTION_FIELDS:
        et = fd.enum_type
        if et is None:
            continue
        kind = type(getattr(_DEFAULT_RULES, fd.name))
        assert issubclass(kind, enum.Enum), fd.name
        prefix = et.values_by_number[0].name.removesuffix("UNSPECIFIED")
        members: dict[str, enum.Enum] = {str(m.value): m for m in kind}
        fwd: dict[int, enum.Enum] = {}
        for v in et.values:
            if v.number == 0:
                continue
            fwd[v.number] = members[v.name.removeprefix(prefix).lower()]
        assert len(fwd) == len(members), f"{fd.name}: wire and engine values differ"
        from_proto[fd.name] = fwd
        to_proto[fd.name] = {m: n for n, m in fwd.items()}
    return from_proto, to_proto


_ENUM_FROM_PROTO, _ENUM_TO_PROTO = _enum_tables()


def rules_from_proto(msg: rules_pb2.Rules, field: str = "rules") -> tuple[str, engine.Rules]:
    """The preset name (``""`` for none) and the engine rules a ``Rules`` message asks for.

    No preset means the RULES.md §12 defaults; then every option set in ``options`` overrides
    (the optional scalars when present, the enums unless ``*_UNSPECIFIED``). An unset
    ``first_dealer`` keeps the preset's (random). Raises :class:`BadField` naming
    ``<field>.preset`` for an unknown preset and ``<field>.options.<option>`` for a value
    outside the option's values (unknown enum numbers included).
    """
    preset = msg.preset
    if preset:
        base = engine.PRESETS.get(preset)
        if base is None:
            raise BadField(
                f"{field}.preset",
                "unknown preset; known: " + ", ".join(sorted(engine.PRESETS)),
                Reason.INVALID_OPTION,
            )
    else:
        base = _DEFAULT_RULES
    if not msg.HasField("options"):
        return preset, base
    overrides: dict[str, Any] = {}
    for fd, value in msg.options.ListFields():
        name = fd.name
        table = _ENUM_FROM_PROTO.get(name)
        if table is None:
            overrides[name] = value
            continue
        member = table.get(value)
        if member is None:
            raise BadField(
                f"{field}.options.{name}", f"unknown value {value}", Reason.INVALID_OPTION
            )
        overrides[name] = member
    if not overrides:
        return preset, base
    try:
        rules = engine.Rules.from_options(overrides, base=base)
    except engine.InvalidOption as e:
        raise BadField(
            f"{field}.options.{e.option}", e.message, from_engine(e.reason)
        ) from None
    return preset, rules


@functools.lru_cache(maxsize=512)
def _rules_msg(preset: str, rules: engine.Rules) -> rules_pb2.Rules:
    """The shared (never mutated) effective-rules message of a (preset, rules) pair."""
    kwargs: dict[str, Any] = {}
    for name, value in rules.options().items():
        table = _ENUM_TO_PROTO.get(name)
        if table is not None:
            kwargs[name] = table[getattr(rules, name)]
        elif name == "first_dealer":
            if value != "random":
                kwargs[name] = value
        else:
            kwargs[name] = value
    return rules_pb2.Rules(preset=preset, options=rules_pb2.RuleOptions(**kwargs))


def rules_to_proto(preset: str, rules: engine.Rules) -> rules_pb2.Rules:
    """The effective rules: the preset name and every option set (``first_dealer`` is unset
    when the first dealer is drawn at random)."""
    out = rules_pb2.Rules()
    out.CopyFrom(_rules_msg(preset, rules))
    return out


# ---------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------

_SING_END = engine.SING + 4


def action_from_proto(msg: action_pb2.Action, field: str = "action") -> int:
    """The engine action number of an ``Action`` (a card 0..39, ``SING + suit``, ``TUTE_12``,
    ``TUTE_11`` or ``EXCHANGE``). :class:`BadField` names ``<field>`` when no kind is set,
    else the malformed part (``<field>.play_card.rank``, ``<field>.sing``,
    ``<field>.declare_tute.rank``)."""
    kind = msg.WhichOneof("kind")
    if kind == "play_card":
        return card_from_proto(msg.play_card, f"{field}.play_card")
    if kind == "sing":
        return engine.SING + suit_from_proto(msg.sing, f"{field}.sing")
    if kind == "declare_tute":
        rank = msg.declare_tute.rank
        if rank == 12:
            return engine.TUTE_12
        if rank == 11:
            return engine.TUTE_11
        raise BadField(f"{field}.declare_tute.rank", "the rank of a tute must be 12 or 11")
    if kind == "exchange_trump":
        return engine.EXCHANGE
    raise BadField(field, "no action kind is set")


def _build_action(action: int) -> action_pb2.Action:
    if 0 <= action < 40:
        return action_pb2.Action(play_card=_CARD[action])
    if engine.SING <= action < _SING_END:
        return action_pb2.Action(sing=_SUIT_PROTO[action - engine.SING])
    if action == engine.TUTE_12:
        return action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=12))
    if action == engine.TUTE_11:
        return action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=11))
    if action == engine.EXCHANGE:
        return action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump())
    raise ValueError(f"action {action} has no wire form (server-only or unknown)")


_ACTION: tuple[action_pb2.Action, ...] = tuple(_build_action(a) for a in range(engine.EXCHANGE + 1))
"""Every player action as a message: shared, never mutated."""


def action_to_proto(action: int) -> action_pb2.Action:
    """A new ``Action`` message for an engine action a player may choose. The server-only
    ``TIMEOUT`` and ``FORFEIT`` have no wire form: ``ValueError``."""
    if not 0 <= action < len(_ACTION):
        raise ValueError(f"action {action} has no wire form (server-only or unknown)")
    out = action_pb2.Action()
    out.CopyFrom(_ACTION[action])
    return out


# ---------------------------------------------------------------------------------------------
# Scores and results
# ---------------------------------------------------------------------------------------------

_END_REASON: dict[str, score_pb2.MatchEndReason] = {
    "score": score_pb2.MATCH_END_REASON_SCORE,
    "tute": score_pb2.MATCH_END_REASON_TUTE,
    "forfeit": score_pb2.MATCH_END_REASON_FORFEIT,
}


def _timestamp(t: float) -> timestamp_pb2.Timestamp:
    seconds = int(t)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=int((t - seconds) * 1e9))


def _cante_msg(players: int, cante: tuple[int, int, int, int]) -> score_pb2.Cante:
    seat, suit, points, trick_no = cante
    return score_pb2.Cante(
        seat=seat,
        side=_SIDE[players][seat],
        suit=_SUIT_PROTO[suit],
        points=points,
        trick_number=trick_no,
        cards=_PAIR_MSGS[suit],
    )


def _tute_msg(
    players: int, seat: int, rank: int, cards: int, trick_no: int
) -> score_pb2.TuteDeclaration:
    return score_pb2.TuteDeclaration(
        seat=seat,
        side=_SIDE[players][seat],
        rank=rank,
        cards=_card_msgs(cards_of(cards)),
        trick_number=trick_no,
    )


def _match_points_awarded(rules: engine.Rules, res: HandResult) -> int:
    """Hands system: the match points the hand winner gained (§10); 0 otherwise."""
    if rules.scoring is not Scoring.HANDS or res.winner < 0:
        return 0
    if res.tute_seat >= 0:
        return 0 if rules.tute_effect is TuteEffect.WINS_MATCH else rules.tute_unit_value
    return rules.capote_value if res.capote else 1


def _hand_result_msg(rules: engine.Rules, res: HandResult) -> score_pb2.HandResult:
    n = rules.players
    out = score_pb2.HandResult(
        game_number=res.game_no,
        hand_number=res.hand_no,
        capote=res.capote,
        cantes=[_cante_msg(n, c) for c in res.cantes],
        match_points_awarded=_match_points_awarded(rules, res),
    )
    if res.winner >= 0:
        out.winner_side = res.winner
    if res.tute_seat >= 0:
        out.tute.CopyFrom(
            _tute_msg(n, res.tute_seat, res.tute_rank, res.tute_cards, res.tute_trick)
        )
    else:
        seats = _SIDE_SEATS[n]
        out.totals.extend(
            score_pb2.SideHandTotal(
                side=s,
                seats=seats[s],
                card_points=res.card_points[s],
                last_trick_points=10 if res.last_trick_side == s else 0,
                cante_points=res.cante_points[s],
                total=res.totals[s],
                tricks_won=res.tricks_won[s],
            )
            for s in range(rules.sides)
        )
    return out


def _side_cante_points(players: int, cantes: Sequence[tuple[int, int, int, int]]) -> list[int]:
    """Per side: the points of the cantes sung (``(seat, suit, points, trick)`` each)."""
    side = _SIDE[players]
    out = [0] * len(_SIDE_SEATS[players])
    for cante in cantes:
        out[side[cante[0]]] += cante[2]
    return out


def _standing(
    players: int,
    game_scores: Sequence[int],
    games_won: Sequence[int],
    match_points: Sequence[int],
    hand_card_points: Sequence[int],
    hand_cante_points: Sequence[int],
    hand_tricks_won: Sequence[int],
) -> list[score_pb2.SideScore]:
    """Per side: the standing and a hand's tally (the ``hand_*`` fields)."""
    seats = _SIDE_SEATS[players]
    return [
        score_pb2.SideScore(
            side=s,
            seats=seats[s],
            game_score=game_scores[s],
            games_won=games_won[s],
            match_points=match_points[s],
            hand_card_points=hand_card_points[s],
            hand_cante_points=hand_cante_points[s],
            hand_tricks_won=hand_tricks_won[s],
        )
        for s in range(len(seats))
    ]


def _final_standing(players: int, state: engine.State) -> list[score_pb2.SideScore]:
    """The standing of a finished match, with the tally of its last hand (the state keeps it:
    the hand scored last, or the one a forfeit cut short, as far as it went)."""
    return _standing(
        players,
        state.game_scores,
        state.games_won,
        state.match_points,
        state.won_points,
        _side_cante_points(players, state.cantes),
        state.tricks_won,
    )


def _match_result_msg(
    players: int,
    winners: Sequence[int],
    reason: str,
    forfeited_seat: int,
    scores: list[score_pb2.SideScore],
) -> score_pb2.MatchResult:
    seats = _SIDE_SEATS[players]
    out = score_pb2.MatchResult(
        winner_sides=winners,
        winner_seats=sorted(seat for side in winners for seat in seats[side]),
        reason=_END_REASON.get(reason, score_pb2.MATCH_END_REASON_UNSPECIFIED),
        scores=scores,
    )
    if reason == "forfeit" and forfeited_seat >= 0:
        out.forfeited_seat = forfeited_seat
    return out


# ---------------------------------------------------------------------------------------------
# Engine events
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class EventVariants:
    """One event as every audience sees it: ``public`` for spectators and for every seat
    without a variant of its own; ``private[seat]`` replaces it for that seat."""

    public: event_pb2.Event
    private: dict[int, event_pb2.Event] = dataclasses.field(default_factory=dict)

    def for_seat(self, seat: int | None) -> event_pb2.Event:
        """The message for ``seat`` (``None``: a spectator)."""
        if seat is None:
            return self.public
        return self.private.get(seat, self.public)


def _hand_dealt(ev: HandDealt) -> EventVariants:
    public = event_pb2.Event(
        hand_dealt=event_pb2.HandDealt(
            game_number=ev.game_no,
            hand_number=ev.hand_no,
            dealer=ev.dealer,
            trump_suit=_SUIT_PROTO[ev.trump_suit],
            trump_card=_CARD[ev.trump_card],
            hand_sizes=[(h or 0).bit_count() for h in ev.hands],
            stock_size=ev.stock_size,
        )
    )
    private: dict[int, event_pb2.Event] = {}
    for seat in range(len(ev.hands)):
        mine = engine.redact(ev, seat)
        assert isinstance(mine, HandDealt)
        hand = mine.hands[seat]
        if hand is None:
            continue
        msg = event_pb2.Event()
        msg.CopyFrom(public)
        msg.hand_dealt.hand.extend(_card_msgs(_sorted_cards(hand)))
        private[seat] = msg
    return EventVariants(public, private)


def _card_drawn_msg(ev: CardDrawn) -> event_pb2.Event:
    msg = event_pb2.CardDrawn(seat=ev.seat, turned_card=ev.public, stock_size=ev.stock_left)
    if ev.card is not None:
        msg.card.CopyFrom(_CARD[ev.card])
    return event_pb2.Event(card_drawn=msg)


def _card_drawn(ev: CardDrawn) -> EventVariants:
    public_ev = engine.redact(ev, None)
    assert isinstance(public_ev, CardDrawn)
    public = _card_drawn_msg(public_ev)
    if ev.public:
        return EventVariants(public)
    mine = engine.redact(ev, ev.seat)
    assert isinstance(mine, CardDrawn)
    return EventVariants(public, {ev.seat: _card_drawn_msg(mine)})


def engine_events_to_proto(
    before: engine.State,
    after: engine.State,
    events: Sequence[engine.Event],
    *,
    forfeit_reason: event_pb2.ForfeitReason = event_pb2.FORFEIT_REASON_LEFT,
) -> list[EventVariants]:
    """The events of one :func:`engine.apply` as messages, one :class:`EventVariants` each.

    ``before`` is the state the action was applied to and ``after`` the result (for the
    opening deal, :func:`engine.opening_events`, pass the new state twice). They give the
    context the engine events leave out: trick numbers and the standing after a hand.
    ``sequence``, ``table_version`` and ``time`` are left unset for the caller.
    ``PlayerForfeited.reason`` is ``forfeit_reason``.
    """
    rules = before.rules
    n = rules.players
    side = _SIDE[n]
    game_ended: GameEnded | None = None
    forfeited = -1
    auto_card = -1
    by_tute = False
    for ev in events:
        if isinstance(ev, GameEnded):
            game_ended = ev
        elif isinstance(ev, PlayerForfeited):
            forfeited = ev.seat
        elif isinstance(ev, CardPlayed) and ev.auto:
            auto_card = ev.card
        elif isinstance(ev, TuteDeclared):
            by_tute = True
    trick_no = before.trick_no
    out: list[EventVariants] = []
    append = out.append
    for ev in events:
        if isinstance(ev, CardPlayed):
            played = event_pb2.CardPlayed(
                seat=ev.seat, card=_CARD[ev.card], trick_number=trick_no, timed_out=ev.auto
            )
            append(EventVariants(event_pb2.Event(card_played=played)))
        elif isinstance(ev, TrickTaken):
            trick = card_pb2.Trick(
                number=ev.trick_no, leader=ev.cards[0][0], winner=ev.winner, points=ev.points
            )
            add = trick.cards.add
            for seat, card in ev.cards:
                add(seat=seat, card=_CARD[card], timed_out=card == auto_card)
            winner_side = side[ev.winner]
            taken = event_pb2.TrickTaken(
                trick=trick,
                winner_side=winner_side,
                last_trick=ev.trick_no == rules.tricks_per_hand,
            )
            append(EventVariants(event_pb2.Event(trick_taken=taken)))
        elif isinstance(ev, CardDrawn):
            append(_card_drawn(ev))
        elif isinstance(ev, HandDealt):
            append(_hand_dealt(ev))
        elif isinstance(ev, TurnTimedOut):
            timed_out = event_pb2.TurnTimedOut(seat=ev.seat, trick_number=trick_no)
            append(EventVariants(event_pb2.Event(turn_timed_out=timed_out)))
        elif isinstance(ev, CanteSung):
            sung = event_pb2.CanteSung(cante=_cante_msg(n, (ev.seat, ev.suit, ev.points, trick_no)))
            append(EventVariants(event_pb2.Event(cante_sung=sung)))
        elif isinstance(ev, TuteDeclared):
            tute = event_pb2.TuteDeclared(tute=_tute_msg(n, ev.seat, ev.rank, ev.cards, trick_no))
            append(EventVariants(event_pb2.Event(tute_declared=tute)))
        elif isinstance(ev, TrumpExchanged):
            exchanged = event_pb2.TrumpExchanged(
                seat=ev.seat, taken=_CARD[ev.taken], given=_CARD[ev.given]
            )
            append(EventVariants(event_pb2.Event(trump_exchanged=exchanged)))
        elif isinstance(ev, HandEnded):
            res = ev.result
            result = _hand_result_msg(rules, res)
            game_scores = game_ended.scores if game_ended is not None else after.game_scores
            # The hand's tally as it ended: a tute counts no card points (the result has 0s),
            # but the tricks it cut short were won all the same.
            card_points = before.won_points if res.tute_seat >= 0 else res.card_points
            scored = event_pb2.HandScored(
                result=result,
                scores=_standing(
                    n, game_scores, after.games_won, after.match_points,
                    card_points, res.cante_points, res.tricks_won,
                ),
            )
            append(EventVariants(event_pb2.Event(hand_scored=scored)))
        elif isinstance(ev, GameEnded):
            game = score_pb2.GameResult(
                game_number=ev.game_no, winner_side=ev.winner, scores=ev.scores, by_tute=by_tute
            )
            append(EventVariants(event_pb2.Event(game_ended=event_pb2.GameEnded(result=game))))
        elif isinstance(ev, PlayerForfeited):
            forfeit = event_pb2.PlayerForfeited(seat=ev.seat, reason=forfeit_reason)
            append(EventVariants(event_pb2.Event(player_forfeited=forfeit)))
        elif isinstance(ev, MatchEnded):
            final = _final_standing(n, after)
            match = _match_result_msg(n, ev.winners, ev.reason, forfeited, final)
            append(EventVariants(event_pb2.Event(match_ended=event_pb2.MatchEnded(result=match))))
        else:  # pragma: no cover - a new engine event must get a conversion here
            raise TypeError(f"no conversion for engine event {type(ev).__name__}")
    return out


# ---------------------------------------------------------------------------------------------
# Tables, seats and the service's own events
# ---------------------------------------------------------------------------------------------

_STATUS: dict[str, table_pb2.TableStatus] = {
    WAITING: table_pb2.TABLE_STATUS_WAITING,
    PLAYING: table_pb2.TABLE_STATUS_PLAYING,
    FINISHED: table_pb2.TABLE_STATUS_FINISHED,
}
_VISIBILITY: dict[str, table_pb2.Visibility] = {
    PUBLIC: table_pb2.VISIBILITY_PUBLIC,
    PRIVATE: table_pb2.VISIBILITY_PRIVATE,
}
_OCCUPANT: dict[str, table_pb2.OccupantKind] = {
    EMPTY: table_pb2.OCCUPANT_KIND_EMPTY,
    HUMAN: table_pb2.OCCUPANT_KIND_HUMAN,
    BOT: table_pb2.OCCUPANT_KIND_BOT,
}
_NOBODY: AbstractSet[int] = frozenset()


def _seat_msg(record: TableRecord, index: int, connected: AbstractSet[int]) -> table_pb2.Seat:
    info = record.seats[index]
    occupant = info.occupant
    bot = occupant == BOT
    return table_pb2.Seat(
        index=index,
        side=side_of(len(record.seats), index),
        occupant=_OCCUPANT.get(occupant, table_pb2.OCCUPANT_KIND_UNSPECIFIED),
        display_name=info.name if occupant != EMPTY else "",
        bot_level=info.bot_level if bot else "",
        connected=bot or (occupant == HUMAN and index in connected),
    )


def _seat_msgs(record: TableRecord, connected: AbstractSet[int]) -> list[table_pb2.Seat]:
    return [_seat_msg(record, i, connected) for i in range(len(record.seats))]


def table_to_proto(
    record: TableRecord, *, connected: AbstractSet[int] = _NOBODY
) -> table_pb2.Table:
    """The lobby summary of a table. ``connected``: the human seats with an open WatchTable
    stream (the record does not know; ``Seat.connected`` is false for the others)."""
    out = table_pb2.Table(
        table_id=record.table_id,
        visibility=_VISIBILITY.get(record.visibility, table_pb2.VISIBILITY_UNSPECIFIED),
        status=_STATUS.get(record.status, table_pb2.TABLE_STATUS_UNSPECIFIED),
        seats=_seat_msgs(record, connected),
        free_seats=len(record.free_seats()),
        create_time=_timestamp(record.created_at),
        version=record.version,
    )
    out.rules.CopyFrom(_rules_msg(record.preset, record.rules))
    return out


def seat_joined_event(
    record: TableRecord, seat: int, *, connected: AbstractSet[int] = _NOBODY
) -> event_pb2.Event:
    """``SeatJoined`` for ``seat`` as the record has it now (public)."""
    return event_pb2.Event(
        seat_joined=event_pb2.SeatJoined(seat=_seat_msg(record, seat, connected))
    )


def seat_left_event(seat: int) -> event_pb2.Event:
    """``SeatLeft``: ``seat`` is free again (public)."""
    return event_pb2.Event(seat_left=event_pb2.SeatLeft(seat=seat))


def match_started_event(
    record: TableRecord, *, connected: AbstractSet[int] = _NOBODY
) -> event_pb2.Event:
    """``MatchStarted`` for a record whose match state exists (public). The first dealer is
    derived from the state (the dealer moves one seat per hand, RULES.md §3)."""
    state = record.state
    if state is None:
        raise ValueError("the match has not started: the record has no state")
    n = state.rules.players
    first_dealer = (state.dealer - (state.hand_no - 1)) % n
    msg = event_pb2.MatchStarted(seats=_seat_msgs(record, connected), first_dealer=first_dealer)
    msg.rules.CopyFrom(_rules_msg(record.preset, record.rules))
    return event_pb2.Event(match_started=msg)


def _turn_kind(state: engine.State) -> table_pb2.TurnKind:
    return table_pb2.TURN_KIND_FOLLOW if state.trick else table_pb2.TURN_KIND_LEAD


def turn_started_event(state: engine.State, deadline: float) -> event_pb2.Event:
    """``TurnStarted`` for the seat on turn in ``state`` (public). ``deadline`` is a Unix
    time; 0 means no clock and leaves the deadline unset."""
    msg = event_pb2.TurnStarted(
        seat=state.turn, kind=_turn_kind(state), trick_number=state.trick_no
    )
    if deadline > 0:
        msg.deadline.CopyFrom(_timestamp(deadline))
    return event_pb2.Event(turn_started=msg)


def turn_started_variants(
    state: engine.State, deadline: float, *, with_legal: bool = True
) -> EventVariants:
    """``TurnStarted`` as :func:`turn_started_event`, and (``with_legal``) a private copy for
    the seat on turn that lists its legal actions (they show its cards: nobody else's copy
    has them)."""
    public = turn_started_event(state, deadline)
    if not with_legal:
        return EventVariants(public)
    seat = state.turn
    mine = event_pb2.Event()
    mine.CopyFrom(public)
    mine.turn_started.legal_actions.extend([_ACTION[a] for a in engine.legal_actions(state, seat)])
    return EventVariants(public, {seat: mine})


# ---------------------------------------------------------------------------------------------
# Views
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16384)
def _completed_trick(
    players: int, number: int, leader: int, cards: tuple[int, ...], winner: int
) -> card_pb2.Trick:
    """A completed trick as a shared (never mutated) message: views of a table show the same
    tricks over and over, and copying a cached message is ten times cheaper than building it.
    """
    return card_pb2.Trick(
        number=number,
        leader=leader,
        cards=[
            card_pb2.PlayedCard(seat=(leader + i) % players, card=_CARD[c])
            for i, c in enumerate(cards)
        ],
        winner=winner,
        points=sum([POINTS[c] for c in cards]),
    )


def view_to_proto(
    record: TableRecord, seat: int | None, *, connected: AbstractSet[int] = _NOBODY
) -> view_pb2.TableView:
    """The ``TableView`` of ``record`` for ``seat`` (``None``: a spectator).

    Every card comes from :func:`engine.view`, so the view holds only what the seat may see.
    Before the match starts only the table part is filled. ``connected`` is as in
    :func:`table_to_proto`. ``PlayedCard.timed_out`` marks the cards of this hand the
    server played on timeout (``record.auto_played``).
    """
    out = view_pb2.TableView(
        table_id=record.table_id,
        version=record.version,
        last_event_sequence=record.last_seq,
        status=_STATUS.get(record.status, table_pb2.TABLE_STATUS_UNSPECIFIED),
        visibility=_VISIBILITY.get(record.visibility, table_pb2.VISIBILITY_UNSPECIFIED),
        seats=_seat_msgs(record, connected),
        game_results=[
            score_pb2.GameResult(
                game_number=g.game_no, winner_side=g.winner, scores=g.scores, by_tute=g.by_tute
            )
            for g in record.games
        ],
    )
    out.rules.CopyFrom(_rules_msg(record.preset, record.rules))
    if seat is not None:
        out.my_seat = seat
        if record.visibility == PRIVATE:
            out.invite_code = record.invite_code
    state = record.state
    if state is None:
        return out

    v = engine.view(state, seat)
    rules = state.rules
    n = v.players
    sides = rules.sides
    playing = v.status == _ENGINE_PLAYING

    out.hand.extend(_card_msgs(_sorted_cards(v.hand)))
    out.legal_actions.extend([_ACTION[a] for a in v.legal if a < len(_ACTION)])

    seat_tricks = [0] * n
    for _, _, winner in v.history:
        seat_tricks[winner] += 1
    out.seat_hands.extend(
        view_pb2.SeatHand(
            seat=s,
            hand_size=v.hand_sizes[s],
            public_cards=_card_msgs(_sorted_cards(v.public_cards[s])),
            tricks_won=seat_tricks[s],
        )
        for s in range(n)
    )

    out.game_number = v.game_no
    out.hand_number = v.hand_no
    out.dealer = v.dealer
    out.trump_suit = _SUIT_PROTO[v.trump]
    out.trump_card.CopyFrom(_CARD[v.trump_card])
    if v.turned_card >= 0:
        out.turned_card.CopyFrom(_CARD[v.turned_card])
    out.stock_size = v.stock_size

    if playing or v.trick:
        cur = out.current_trick
        cur.number = v.trick_no
        cur.leader = v.leader
        add = cur.cards.add
        for s, c in v.trick:
            add(seat=s, card=_CARD[c], timed_out=bool(record.auto_played >> c & 1))
            cur.points += POINTS[c]

    out.completed_tricks.extend(
        [
            _completed_trick(n, i + 1, leader, cards, winner)
            for i, (leader, cards, winner) in enumerate(v.history)
        ]
    )
    if record.auto_played:
        for trick, (_, cards, _) in zip(out.completed_tricks, v.history, strict=True):
            for played, c in zip(trick.cards, cards, strict=True):
                if record.auto_played >> c & 1:
                    played.timed_out = True

    out.cantes.extend([_cante_msg(n, c) for c in v.cantes])
    cante_points = [0] * sides
    for cante in v.cantes:
        cante_points[_SIDE[n][cante[0]]] += cante[2]
    side_seats = _SIDE_SEATS[n]
    out.scores.extend(
        score_pb2.SideScore(
            side=s,
            seats=side_seats[s],
            game_score=v.game_scores[s],
            games_won=v.games_won[s],
            match_points=v.match_points[s],
            hand_card_points=v.won_points[s],
            hand_cante_points=cante_points[s],
            hand_tricks_won=v.tricks_won[s],
        )
        for s in range(sides)
    )

    if playing:
        out.turn_seat = v.turn
        out.turn_kind = table_pb2.TURN_KIND_FOLLOW if v.trick else table_pb2.TURN_KIND_LEAD
        if record.deadline > 0:
            out.turn_deadline.CopyFrom(_timestamp(record.deadline))

    res = v.last_result
    if res is not None:
        out.last_hand_result.CopyFrom(_hand_result_msg(rules, res))

    if not playing:
        out.match_result.CopyFrom(
            _match_result_msg(
                n, v.winners, v.end_reason, record.forfeited_seat, _final_standing(n, state)
            )
        )
    return out
