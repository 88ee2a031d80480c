"""Remote bots: a program that takes a seat over gRPC like any third-party client and plays
it with the engine's bots (:data:`engine.bots.BOTS`) on its own view.

This is the reference for people writing their own bot: join (or be given a seat token),
follow :meth:`~clients.sdk.TuteClient.watch`, and whenever the model has legal actions, pick
one and submit it. The engine's bots take an :class:`engine.View`; :func:`engine_view`
builds it from the wire ``TableView`` (what the server shows this seat, nothing more).
"""

from __future__ import annotations

import enum
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

import engine
from engine.bots import BOTS
from engine.cards import card_of
from engine.events import HandResult
from engine.state import OVER, PLAYING
from tute.v1 import action_pb2, card_pb2, rules_pb2, score_pb2, table_pb2, view_pb2

from .cards import action_text
from .errors import IllegalMove, StaleVersion
from .sdk import TuteClient
from .table import Table, side_of

_SUITS = (card_pb2.SUIT_OROS, card_pb2.SUIT_COPAS, card_pb2.SUIT_ESPADAS, card_pb2.SUIT_BASTOS)
_RANKS = (1, 2, 3, 4, 5, 6, 7, 10, 11, 12)
_END_REASON = {
    score_pb2.MATCH_END_REASON_SCORE: "score",
    score_pb2.MATCH_END_REASON_TUTE: "tute",
    score_pb2.MATCH_END_REASON_FORFEIT: "forfeit",
}


def levels() -> list[str]:
    """The bot levels this program knows (the engine's, by name)."""
    return sorted(BOTS)


def engine_card(c: card_pb2.Card) -> int:
    """The engine's card number (0..39) of a wire card."""
    return card_of(int(c.suit) - 1, c.rank)


def _mask(cards: Sequence[card_pb2.Card]) -> int:
    m = 0
    for c in cards:
        m |= 1 << engine_card(c)
    return m


def engine_action(a: action_pb2.Action) -> int:
    """The engine's action number of a wire action."""
    kind = a.WhichOneof("kind")
    if kind == "play_card":
        return engine_card(a.play_card)
    if kind == "sing":
        return engine.SING + int(a.sing) - 1
    if kind == "declare_tute":
        return engine.TUTE_12 if a.declare_tute.rank == 12 else engine.TUTE_11
    if kind == "exchange_trump":
        return engine.EXCHANGE
    raise ValueError(f"not a player action: {a}")


def wire_action(action: int) -> action_pb2.Action:
    """The wire form of an engine action a player may choose."""
    if engine.is_card(action):
        suit, rank = divmod(action, 10)
        return action_pb2.Action(play_card=card_pb2.Card(suit=_SUITS[suit], rank=_RANKS[rank]))
    if engine.SING <= action < engine.SING + 4:
        return action_pb2.Action(sing=_SUITS[action - engine.SING])
    if action in (engine.TUTE_12, engine.TUTE_11):
        rank = 12 if action == engine.TUTE_12 else 11
        return action_pb2.Action(declare_tute=action_pb2.DeclareTute(rank=rank))
    if action == engine.EXCHANGE:
        return action_pb2.Action(exchange_trump=action_pb2.ExchangeTrump())
    raise ValueError(f"action {action} has no wire form")


def _cante(c: score_pb2.Cante) -> tuple[int, int, int, int]:
    return (c.seat, int(c.suit) - 1, c.points, c.trick_number)


def _hand_result(players: int, r: score_pb2.HandResult) -> HandResult:
    sides = 3 if players == 3 else 2
    cante_points = [0] * sides
    for c in r.cantes:
        cante_points[side_of(players, c.seat)] += c.points
    card_points = [0] * sides
    totals = [0] * sides
    tricks = [0] * sides
    last_side = -1
    for t in r.totals:
        card_points[t.side] = t.card_points
        totals[t.side] = t.total
        tricks[t.side] = t.tricks_won
        if t.last_trick_points:
            last_side = t.side
    tute = r.tute if r.HasField("tute") else None
    return HandResult(
        hand_no=r.hand_number,
        card_points=tuple(card_points),
        last_trick_side=last_side,
        cante_points=tuple(cante_points),
        totals=tuple(totals),
        winner=r.winner_side if r.HasField("winner_side") else -1,
        capote=r.capote,
        tute_seat=tute.seat if tute is not None else -1,
        tute_rank=tute.rank if tute is not None else 0,
        tute_cards=_mask(tute.cards) if tute is not None else 0,
        game_no=r.game_number,
        # A hand ended by a tute has no totals on the wire: its tricks are not counted.
        tricks_won=tuple(tricks),
        cantes=tuple(_cante(c) for c in r.cantes),
        tute_trick=tute.trick_number if tute is not None else 0,
    )


def engine_view(v: view_pb2.TableView) -> engine.View:
    """The engine's :class:`engine.View` of a match from the wire view of the same seat:
    what a server-side bot in that seat would get (but ``turn_id``, which is not on the
    wire: 0). The match must have started."""
    n = v.rules.options.players or len(v.seats)
    sides = 3 if n == 3 else 2
    playing = v.status == table_pb2.TABLE_STATUS_PLAYING
    cur = v.current_trick if v.HasField("current_trick") else None
    history = tuple(
        (t.leader, tuple(engine_card(p.card) for p in t.cards), t.winner)
        for t in v.completed_tricks
    )
    if cur is not None:
        leader, trick_no = cur.leader, cur.number
    elif history:
        leader, trick_no = history[-1][2], len(history) + 1
    else:
        leader, trick_no = (v.dealer + 1) % n, 1
    scores = sorted(v.scores, key=lambda s: s.side)
    per_side = [scores[s] if s < len(scores) else score_pb2.SideScore(side=s) for s in range(sides)]
    hands = sorted(v.seat_hands, key=lambda h: h.seat)
    result = v.match_result
    return engine.View(
        seat=v.my_seat if v.HasField("my_seat") else None,
        players=n,
        status=PLAYING if playing else OVER,
        hand_no=v.hand_number,
        game_no=v.game_number,
        dealer=v.dealer,
        trump=int(v.trump_suit) - 1,
        trump_card=engine_card(v.trump_card),
        hand=_mask(v.hand),
        hand_sizes=tuple(h.hand_size for h in hands),
        public_cards=tuple(_mask(h.public_cards) for h in hands),
        turned_card=engine_card(v.turned_card) if v.HasField("turned_card") else -1,
        stock_size=v.stock_size,
        leader=leader,
        turn=v.turn_seat if v.HasField("turn_seat") else leader,
        trick_no=trick_no,
        trick=tuple((p.seat, engine_card(p.card)) for p in cur.cards) if cur is not None else (),
        history=history,
        tricks_won=tuple(s.hand_tricks_won for s in per_side),
        won_points=tuple(s.hand_card_points for s in per_side),
        cantes=tuple(_cante(c) for c in v.cantes),
        game_scores=tuple(s.game_score for s in per_side),
        match_points=tuple(s.match_points for s in per_side),
        games_won=tuple(s.games_won for s in per_side),
        last_result=_hand_result(n, v.last_hand_result) if v.HasField("last_hand_result") else None,
        winners=tuple(result.winner_sides) if not playing else (),
        end_reason=_END_REASON.get(result.reason, "") if not playing else "",
        legal=tuple(sorted(engine_action(a) for a in v.legal_actions)),
        turn_id=0,
    )


def engine_rules(msg: rules_pb2.Rules) -> engine.Rules:
    """The engine's rules from the wire ``Rules`` of a view (its preset, then every option
    it sets). A wire enum value is the enum's name in upper snake case, ``_``, and the
    engine member's value upper-cased (``STOCK_PHASE_RULES_TRUMP_LEAD``: ``trump_lead``)."""
    base = engine.PRESETS.get(msg.preset) or engine.Rules()
    overrides: dict[str, Any] = {}
    for fd, value in msg.options.ListFields():
        default = getattr(base, fd.name)
        if isinstance(default, enum.Enum) and fd.enum_type is not None:
            prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", fd.enum_type.name).upper() + "_"
            name = fd.enum_type.values_by_number[value].name
            overrides[fd.name] = type(default)(name.removeprefix(prefix).lower())
        else:
            overrides[fd.name] = value
    return engine.Rules.from_options(overrides, base=base) if overrides else base


def choose(level: str, view: view_pb2.TableView, rng: random.Random) -> action_pb2.Action:
    """The action the engine's bot ``level`` picks on this view (which must have legal
    actions)."""
    bot = BOTS.get(level)
    if bot is None:
        raise ValueError(f"unknown bot level {level!r}; known: {', '.join(levels())}")
    return wire_action(bot(engine_rules(view.rules), engine_view(view), rng))


async def play_seat(
    client: TuteClient,
    table_id: str,
    level: str,
    rng: random.Random,
    log: Callable[[str], None] = lambda line: None,
) -> Table:
    """Play the client's seat at ``table_id`` with the engine's bot ``level`` until the match
    ends; returns the final model. A move refused because the table moved on (a stale view)
    is logged and the bot waits for the next update."""
    async for update in client.watch(table_id):
        table = update.table
        if table.finished:
            return table
        if not table.legal_actions:
            continue
        action = choose(level, table.view, rng)
        try:
            await client.submit(table_id=table_id, action=action)
        except (IllegalMove, StaleVersion) as err:
            log(f"{action_text(action)} refused ({err.reason}); waiting for the next turn")
            continue
        log(f"played {action_text(action)}")
    raise RuntimeError("the server closed the stream before the match ended")
