"""Wire values: suits, cards, actions and rules to and from their ``tute.v1`` messages.

**In** (``*_from_proto``): request content to engine values. Malformed content raises
:class:`BadField` naming the field by its path in the request (``rules.options.players``,
``action.play_card.rank``); the servicer turns it into INVALID_ARGUMENT with a
``google.rpc.BadRequest``. Nothing here judges legality: a well-formed card the seat does not
hold is the engine's business (FAILED_PRECONDITION).

**Out**: the 40 ``Card`` messages (:data:`CARDS`), the ``Action`` messages (:data:`ACTIONS`) and
the effective rules of each (preset, rules) pair (:func:`rules_msg`) are built once and copied
into outgoing messages (upb copies a small message in well under a microsecond): they are
shared and never mutated.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable
from typing import Any

from google.protobuf import timestamp_pb2

import engine
from engine.cards import ALL_CARDS, RANK_OF, RANKS, STRENGTH, SUIT_OF, card_of
from service.reasons import Reason, from_engine
from tute.v1 import action_pb2, card_pb2, rules_pb2


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

SIDE: dict[int, tuple[int, ...]] = {
    n: tuple(engine.side_of(n, s) for s in range(n)) for n in engine.SIDE_SEATS
}
"""Per number of players: the side of each seat (:func:`engine.side_of`, as a table)."""
SIDE_SEATS = engine.SIDE_SEATS
side_of = engine.side_of


# ---------------------------------------------------------------------------------------------
# Suits and cards
# ---------------------------------------------------------------------------------------------

SUITS: tuple[card_pb2.Suit, ...] = (
    card_pb2.SUIT_OROS,
    card_pb2.SUIT_COPAS,
    card_pb2.SUIT_ESPADAS,
    card_pb2.SUIT_BASTOS,
)
_RANK_INDEX: dict[int, int] = {rank: i for i, rank in enumerate(RANKS)}

CARDS: tuple[card_pb2.Card, ...] = tuple(
    card_pb2.Card(suit=SUITS[SUIT_OF[c]], rank=RANK_OF[c]) for c in ALL_CARDS
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


def sorted_cards(mask: int) -> tuple[int, ...]:
    """The cards of a mask by suit (O C E B), strongest first inside a suit."""
    return (
        _SORTED_CHUNK[0][mask & 0x3FF]
        + _SORTED_CHUNK[1][(mask >> 10) & 0x3FF]
        + _SORTED_CHUNK[2][(mask >> 20) & 0x3FF]
        + _SORTED_CHUNK[3][mask >> 30]
    )


def card_msgs(cards: Iterable[int]) -> list[card_pb2.Card]:
    return [CARDS[c] for c in cards]


PAIR_MSGS: tuple[tuple[card_pb2.Card, card_pb2.Card], ...] = tuple(
    (CARDS[card_of(s, 12)], CARDS[card_of(s, 11)]) for s in range(4)
)
"""Per suit: the 12 and the 11, the cards a cante shows."""


def suit_to_proto(suit: int) -> card_pb2.Suit:
    """The wire suit of an engine suit (0..3 = oros, copas, espadas, bastos)."""
    return SUITS[suit]


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
    out.CopyFrom(CARDS[card])
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
        raise BadField(f"{field}.options.{e.option}", e.message, from_engine(e.reason)) from None
    return preset, rules


@functools.lru_cache(maxsize=512)
def rules_msg(preset: str, rules: engine.Rules) -> rules_pb2.Rules:
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
    out.CopyFrom(rules_msg(preset, rules))
    return out


# ---------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------


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
    if engine.is_card(action):
        return action_pb2.Action(play_card=CARDS[action])
    if engine.is_sing(action):
        return action_pb2.Action(sing=SUITS[action - engine.SING])
    if action == engine.TUTE_12:
        return action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=12))
    if action == engine.TUTE_11:
        return action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=11))
    if action == engine.EXCHANGE:
        return action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump())
    raise ValueError(f"action {action} has no wire form (server-only or unknown)")


ACTIONS: tuple[action_pb2.Action, ...] = tuple(
    _build_action(a) for a in range(engine.NUM_PLAYER_ACTIONS)
)
"""Every player action as a message: shared, never mutated."""


def action_to_proto(action: int) -> action_pb2.Action:
    """A new ``Action`` message for an engine action a player may choose. The server-only
    ``TIMEOUT`` and ``FORFEIT`` have no wire form: ``ValueError``."""
    if not 0 <= action < len(ACTIONS):
        raise ValueError(f"action {action} has no wire form (server-only or unknown)")
    out = action_pb2.Action()
    out.CopyFrom(ACTIONS[action])
    return out


def timestamp(t: float) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    set_time(ts, t)
    return ts


def set_time(ts: timestamp_pb2.Timestamp, t: float) -> None:
    """Set a message's Timestamp field ``ts`` to the Unix time ``t`` in place (no message to
    copy into it)."""
    seconds = int(t)
    ts.seconds = seconds
    ts.nanos = int((t - seconds) * 1e9)
