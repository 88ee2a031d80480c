"""Scoring: how a hand ends (RULES.md §9) and what it is worth to the match (§10).

Pure functions of a state whose hand has just ended; :func:`engine.game._end_hand` applies
their answers (and deals the next hand or ends the match).
"""

from __future__ import annotations

from typing import Final, NamedTuple

from .cards import Mask
from .events import HandResult, Standing
from .rules import Rules, Scoring, TieRule, TuteEffect
from .state import State, side_of

LAST_TRICK_POINTS: Final = 10
"""Las diez de últimas: the points of the last trick of a hand (§9)."""
FORTY: Final = 40
"""A cante of the trump suit (las cuarenta, §6)."""
TWENTY: Final = 20
"""A cante of any other suit (las veinte, §6)."""


def tie_break(values: tuple[int, ...], last_trick_of: tuple[int, ...], rule: TieRule | str) -> int:
    """The side with the highest value; a tie goes to the side whose latest trick came last
    under ``tie_rule = last_trick`` (§9, §10), and is no winner (-1) under ``none``."""
    top = max(values)
    tied = [s for s in range(len(values)) if values[s] == top]
    if len(tied) == 1:
        return tied[0]
    if rule is TieRule.LAST_TRICK:
        return max(tied, key=last_trick_of.__getitem__)
    return -1


def cante_points(players: int, cantes: tuple[tuple[int, int, int, int], ...]) -> tuple[int, ...]:
    """Per side: the points of ``cantes`` ((seat, suit, points, trick number) each)."""
    out = [0] * (3 if players == 3 else 2)
    for seat, _suit, points, _trick in cantes:
        out[side_of(players, seat)] += points
    return tuple(out)


def hand_result(state: State, last_winner: int, tute: tuple[int, int, Mask] | None) -> HandResult:
    """The result of the hand ``state`` ends: won by tricks (``last_winner`` took the last
    one) or by ``tute`` = (seat, rank, cards) declared in the current window."""
    rules = state.rules
    n = rules.players
    sides = rules.sides
    cantes = cante_points(n, state.cantes)
    if tute is not None:
        t_seat, t_rank, t_cards = tute
        return HandResult(
            hand_no=state.hand_no,
            card_points=(0,) * sides,
            last_trick_side=-1,
            cante_points=cantes,
            totals=(0,) * sides,
            winner=side_of(n, t_seat),
            capote=False,
            tute_seat=t_seat,
            tute_rank=t_rank,
            tute_cards=t_cards,
            game_no=state.game_no,
            tricks_won=state.tricks_won,
            cantes=state.cantes,
            tute_trick=state.trick_no,
        )
    last_side = side_of(n, last_winner)
    totals = tuple(
        [
            state.won_points[s] + cantes[s] + (LAST_TRICK_POINTS if s == last_side else 0)
            for s in range(sides)
        ]
    )
    return HandResult(
        hand_no=state.hand_no,
        card_points=state.won_points,
        last_trick_side=last_side,
        cante_points=cantes,
        totals=totals,
        winner=tie_break(totals, state.last_trick_of, rules.tie_rule),
        capote=any(t == rules.tricks_per_hand for t in state.tricks_won),
        tute_seat=-1,
        tute_rank=0,
        tute_cards=0,
        game_no=state.game_no,
        tricks_won=state.tricks_won,
        cantes=state.cantes,
        tute_trick=0,
    )


def match_points_awarded(rules: Rules, result: HandResult) -> int:
    """Hands system: the match points the hand's winner gains (§10): 1, ``capote_value`` for a
    capote, ``tute_unit_value`` for a tute. 0 otherwise: the points system, a tied hand, or a
    tute that wins the match outright (``tute_effect = wins_match``)."""
    if rules.scoring is not Scoring.HANDS or result.winner < 0:
        return 0
    if result.tute_seat >= 0:
        return 0 if rules.tute_effect is TuteEffect.WINS_MATCH else rules.tute_unit_value
    return rules.capote_value if result.capote else 1


class Scored(NamedTuple):
    """What a hand's result does to the match (§10)."""

    game_scores: tuple[int, ...]
    """Per side: the current game's scores after the hand (a game won: its final scores)."""
    games_won: tuple[int, ...]
    match_points: tuple[int, ...]
    game_winner: int
    """The side that won the game with this hand (points system), or -1."""
    match_winner: int
    """The side that won the match with this hand, or -1."""


def score_hand(state: State, result: HandResult) -> Scored:
    """The match after ``state``'s hand ended with ``result`` (§10)."""
    rules = state.rules
    scores = state.game_scores
    won = state.games_won
    points = state.match_points
    by_tute = result.tute_seat >= 0
    if by_tute and rules.tute_effect is TuteEffect.WINS_MATCH:
        return Scored(scores, won, points, -1, result.winner)
    if rules.scoring is Scoring.HANDS:
        if result.winner >= 0:
            points = _plus(points, result.winner, match_points_awarded(rules, result))
        leaders = [s for s in range(len(points)) if points[s] >= rules.target_match_points]
        best = max(leaders, key=points.__getitem__) if leaders else -1
        return Scored(scores, won, points, -1, best)
    game_winner = -1
    if by_tute:
        game_winner = result.winner
    else:
        scores = tuple([scores[s] + result.totals[s] for s in range(len(scores))])
        if max(scores) >= rules.target_points:
            game_winner = tie_break(scores, state.last_trick_of, rules.tie_rule)
    if game_winner < 0:
        return Scored(scores, won, points, -1, -1)
    won = _plus(won, game_winner, 1)
    match_winner = game_winner if won[game_winner] >= rules.games_to_win else -1
    return Scored(scores, won, points, game_winner, match_winner)


def _plus(values: tuple[int, ...], side: int, amount: int) -> tuple[int, ...]:
    return tuple([v + amount if s == side else v for s, v in enumerate(values)])


def standing(state: State) -> Standing:
    """The standing of ``state``, with the tally of its current hand."""
    return Standing(
        game_scores=state.game_scores,
        games_won=state.games_won,
        match_points=state.match_points,
        card_points=state.won_points,
        cante_points=cante_points(state.rules.players, state.cantes),
        tricks_won=state.tricks_won,
    )
