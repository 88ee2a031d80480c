"""Scores and results as ``tute.v1`` messages: cantes, tutes, hand and match results, the
standing per side.

Scores (``SideScore``): in views they carry the current hand's figures (``hand_*``); in events
(``HandScored.scores``, ``MatchResult.scores``) only the standing (game score, games won, match
points) is set and the ``hand_*`` fields are 0: the hand's own figures are in its
``HandResult``. ``TableView.match_result`` is built by the same function as the event's, so a
frontend sees the same message either way.
"""

from __future__ import annotations

from collections.abc import Sequence

import engine
from engine.cards import cards_of
from engine.events import HandResult, Standing
from tute.v1 import score_pb2

from .cards import PAIR_MSGS, SIDE, SIDE_SEATS, SUITS, card_msgs

_END_REASON: dict[str, score_pb2.MatchEndReason] = {
    "score": score_pb2.MATCH_END_REASON_SCORE,
    "tute": score_pb2.MATCH_END_REASON_TUTE,
    "forfeit": score_pb2.MATCH_END_REASON_FORFEIT,
}


def cante_msg(players: int, cante: tuple[int, int, int, int]) -> score_pb2.Cante:
    seat, suit, points, trick_no = cante
    return score_pb2.Cante(
        seat=seat,
        side=SIDE[players][seat],
        suit=SUITS[suit],
        points=points,
        trick_number=trick_no,
        cards=PAIR_MSGS[suit],
    )


def tute_msg(
    players: int, seat: int, rank: int, cards: int, trick_no: int
) -> score_pb2.TuteDeclaration:
    return score_pb2.TuteDeclaration(
        seat=seat,
        side=SIDE[players][seat],
        rank=rank,
        cards=card_msgs(cards_of(cards)),
        trick_number=trick_no,
    )


def hand_result_msg(rules: engine.Rules, res: HandResult, awarded: int) -> score_pb2.HandResult:
    """A hand's result; ``awarded``: the match points its winner gained (hands system, §10)."""
    n = rules.players
    out = score_pb2.HandResult(
        game_number=res.game_no,
        hand_number=res.hand_no,
        capote=res.capote,
        cantes=[cante_msg(n, c) for c in res.cantes],
        match_points_awarded=awarded,
    )
    if res.winner >= 0:
        out.winner_side = res.winner
    if res.tute_seat >= 0:
        out.tute.CopyFrom(tute_msg(n, res.tute_seat, res.tute_rank, res.tute_cards, res.tute_trick))
    else:
        seats = SIDE_SEATS[n]
        out.totals.extend(
            score_pb2.SideHandTotal(
                side=s,
                seats=seats[s],
                card_points=res.card_points[s],
                last_trick_points=engine.LAST_TRICK_POINTS if res.last_trick_side == s else 0,
                cante_points=res.cante_points[s],
                total=res.totals[s],
                tricks_won=res.tricks_won[s],
            )
            for s in range(rules.sides)
        )
    return out


def standing(players: int, st: Standing) -> list[score_pb2.SideScore]:
    """Per side: the standing and a hand's tally (the ``hand_*`` fields)."""
    seats = SIDE_SEATS[players]
    return [
        score_pb2.SideScore(
            side=s,
            seats=seats[s],
            game_score=st.game_scores[s],
            games_won=st.games_won[s],
            match_points=st.match_points[s],
            hand_card_points=st.card_points[s],
            hand_cante_points=st.cante_points[s],
            hand_tricks_won=st.tricks_won[s],
        )
        for s in range(len(seats))
    ]


def match_result_msg(
    players: int,
    winners: Sequence[int],
    reason: str,
    forfeited_seat: int,
    scores: list[score_pb2.SideScore],
) -> score_pb2.MatchResult:
    seats = SIDE_SEATS[players]
    out = score_pb2.MatchResult(
        winner_sides=winners,
        winner_seats=sorted(seat for side in winners for seat in seats[side]),
        reason=_END_REASON.get(reason, score_pb2.MATCH_END_REASON_UNSPECIFIED),
        scores=scores,
    )
    if reason == "forfeit" and forfeited_seat >= 0:
        out.forfeited_seat = forfeited_seat
    return out
