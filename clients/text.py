"""Words for what happens at a table: one line per event, side names, scores (the terminal
client's log, ``tute watch --plain`` and the bot's log share them)."""

from __future__ import annotations

from tute.v1 import event_pb2, rules_pb2, score_pb2, table_pb2

from .cards import SUIT_NAMES, card_text
from .table import Table, sides_of

_TURN_KIND = {table_pb2.TURN_KIND_LEAD: "to lead", table_pb2.TURN_KIND_FOLLOW: "to follow"}
_END = {
    score_pb2.MATCH_END_REASON_SCORE: "on points",
    score_pb2.MATCH_END_REASON_TUTE: "by a tute",
    score_pb2.MATCH_END_REASON_FORFEIT: "by forfeit",
}
_FORFEIT = {
    event_pb2.FORFEIT_REASON_LEFT: "left the match",
    event_pb2.FORFEIT_REASON_DISCONNECTED: "stayed away too long and forfeits",
}


def plural(n: int, word: str) -> str:
    """``1 trick``, ``2 tricks``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def side_name(table: Table, side: int) -> str:
    """``Ana`` or ``Ana & Carlos`` (4 players)."""
    groups = sides_of(table.players or 2)
    seats = groups[side] if side < len(groups) else [side]
    return " & ".join(table.seat_name(s) for s in seats)


def describe(table: Table, ev: event_pb2.Event) -> str:  # noqa: C901 - one line of text per event type, a flat dispatch
    """One line for people about an event (already applied to ``table``)."""
    kind = ev.WhichOneof("kind")
    name = table.seat_name
    if kind == "seat_joined":
        s = ev.seat_joined.seat
        return f"{s.display_name or f'seat {s.index}'} sits down at seat {s.index}"
    if kind == "seat_left":
        return f"seat {ev.seat_left.seat} is free again"
    if kind == "match_started":
        m = ev.match_started
        preset = m.rules.preset or "custom rules"
        return f"the match starts: {len(m.seats)} players, {preset}"
    if kind == "hand_dealt":
        d = ev.hand_dealt
        line = (
            f"hand {d.hand_number} (game {d.game_number}): {name(d.dealer)} deals; trump is "
            f"{SUIT_NAMES.get(d.trump_suit, '?')} ({card_text(d.trump_card)})"
        )
        if d.hand:
            line += "; your cards: " + " ".join(card_text(c) for c in d.hand)
        return line
    if kind == "turn_started":
        turn = ev.turn_started
        return (
            f"{name(turn.seat)}'s turn {_TURN_KIND.get(turn.kind, '')} (trick {turn.trick_number})"
        )
    if kind == "card_played":
        p = ev.card_played
        return f"{name(p.seat)} plays {card_text(p.card)}" + (
            " (time ran out)" if p.timed_out else ""
        )
    if kind == "trick_taken":
        taken = ev.trick_taken
        last = " and las diez de últimas" if taken.last_trick else ""
        return (
            f"{name(taken.trick.winner)} takes trick {taken.trick.number} "
            f"({taken.trick.points} points{last})"
        )
    if kind == "card_drawn":
        drawn = ev.card_drawn
        who = name(drawn.seat)
        if drawn.turned_card:
            return f"{who} draws the turned card {card_text(drawn.card)}"
        if drawn.HasField("card"):
            return f"{who} draws {card_text(drawn.card)} ({drawn.stock_size} left)"
        return f"{who} draws a card ({drawn.stock_size} left)"
    if kind == "cante_sung":
        c = ev.cante_sung.cante
        return f"{name(c.seat)} sings las {c.points} in {SUIT_NAMES.get(c.suit, '?')}"
    if kind == "tute_declared":
        tute = ev.tute_declared.tute
        what = "reyes" if tute.rank == 12 else "caballos"
        return f"{name(tute.seat)} declares tute de {what}!"
    if kind == "trump_exchanged":
        x = ev.trump_exchanged
        return f"{name(x.seat)} exchanges {card_text(x.given)} for the turned {card_text(x.taken)}"
    if kind == "turn_timed_out":
        return f"{name(ev.turn_timed_out.seat)} ran out of time"
    if kind == "hand_scored":
        return hand_line(table, ev.hand_scored.result)
    if kind == "game_ended":
        g = ev.game_ended.result
        scores = "-".join(str(s) for s in g.scores)
        how = " by a tute" if g.by_tute else ""
        return f"game {g.game_number} goes to {side_name(table, g.winner_side)}{how} ({scores})"
    if kind == "player_forfeited":
        f = ev.player_forfeited
        return f"{name(f.seat)} {_FORFEIT.get(f.reason, 'forfeits')}"
    if kind == "match_ended":
        return match_line(table, ev.match_ended.result)
    return f"({kind or 'an unknown event'})"


def hand_line(table: Table, r: score_pb2.HandResult) -> str:
    """``hand 2: Ana 67, Bob 63; Ana wins it``."""
    if r.HasField("tute"):
        return f"hand {r.hand_number}: {table.seat_name(r.tute.seat)} won it with a tute"
    totals = ", ".join(f"{side_name(table, t.side)} {t.total}" for t in r.totals)
    if r.HasField("winner_side"):
        who = f"{side_name(table, r.winner_side)} wins it" + (" (capote!)" if r.capote else "")
    else:
        who = "a tie"
    return f"hand {r.hand_number}: {totals}; {who}"


def match_line(table: Table, r: score_pb2.MatchResult) -> str:
    """``match over: Ana wins on points``."""
    winners = " and ".join(side_name(table, s) for s in r.winner_sides) or "nobody"
    verb = "wins" if len(r.winner_sides) == 1 else "win"
    return f"match over: {winners} {verb} {_END.get(r.reason, '')}".rstrip()


def score_line(table: Table, side: int) -> str:
    """One side's standing for the score board."""
    scores = table.view.scores
    if side >= len(scores):
        return side_name(table, side)
    s = scores[side]
    options = table.view.rules.options
    if options.scoring == rules_pb2.SCORING_HANDS:
        standing = f"{s.match_points}/{options.target_match_points or '?'} match points"
    else:
        standing = f"{s.game_score}/{options.target_points or '?'} points"
        if options.games_to_win > 1:
            standing += f", {s.games_won} games"
    hand = s.hand_card_points + s.hand_cante_points
    return (
        f"{side_name(table, side)}: {standing} · this hand {hand} "
        f"({plural(s.hand_tricks_won, 'trick')})"
    )
