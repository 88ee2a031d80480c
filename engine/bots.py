"""Bots: pure functions of the table's rules, one seat's :class:`~engine.view.View` and a
random generator. A bot sees exactly what its seat may see, never the hidden hands.

The levels (``BOTS``) are budgets of one search, weakest first:

- ``random``: a uniformly random legal action.
- ``easy``: rules of thumb, no search: declare a tute, take the turned trump card, sing the
  40 before a 20; win tricks that hold points with the cheapest winning card; throw points on
  a partner's trick that is safe; never overtrump a partner who is winning when the rules let
  it choose; keep the rey and caballo of a suit together until it can sing them; keep a low
  trump for las diez de últimas; with four trumps or more lead the master trump; otherwise
  play the cheapest card. A master (a card nobody can head) that holds points is led, and a
  master is trusted, unless an opponent still to play is known, from the obligations
  of play, to be void of its suit and may hold a trump.
- ``medium``: determinized Monte Carlo: over a few dozen deals sampled consistently with the
  view (:mod:`engine.determinize`), each legal card is played out to the end of the hand
  (with no stock left by the quick rule of thumb of :class:`engine.search.Rollout` on bit
  masks, with a stock by the ``easy`` policy on the real engine); the card with the best mean
  outcome is played.
- ``hard``: the same search with three times the samples and the exact endgame solver of
  :mod:`engine.search`: once every hand holds at most 6 cards (in 2p, once the stock is
  gone: then the deal is known) it scores each card on each sample instead of a playout,
  and before that each playout with no stock solves its last 5 tricks exactly. At a 4p
  table it solves from 4 cards a hand and plays its playouts out without exact tails
  (:data:`HARD_4P`): as strong there, at a thirteenth of the CPU; at a 3p table it solves
  from 4 cards a hand and the playouts' last 3 tricks, over 400 samples (:data:`HARD_3P`):
  as strong, at half the CPU.

The search can weight its sampled deals by inference (``Budget.infer_eps``, off in every
level): a deal counts by how likely the cards the other seats played this hand are under the
``easy`` rules of thumb with that deal's hands (:func:`likelihood`). Against ``easy`` players
it raises the samples' mean weight on the true holder of a hidden card from 0.40 to 0.51 in
4p (0.74 to 0.90 in the last two tricks); against ``medium``, who plays the rules of thumb's
card in under half of its choices, from 0.38 to 0.40 at most, with no measurable gain in the
cards chosen (``python -m benchmarks.bot_inference``), so no level uses it.

The playouts can search before they play (``Budget.lookahead``, off in every level): the
next cards after the one scored chosen by alpha-beta on the sample, the hand played out from
each line's end (:class:`engine.search.Lookahead`). Measured against the real deal solved
exactly, it cuts what ``hard``'s card loses in 4p from 4.5 points to 3.2, at half the CPU;
but in matches against ``medium`` it wins less than plain ``hard`` (README, Bots), so no
level uses it.

Every level makes the same declarations as ``easy`` (a tute, the exchange, the best cante:
none of them ever costs anything), then chooses its card. A level's think time is bounded by
its ``time_s``; below that bound the choice depends only on the view and the generator, so the
same view and seed give the same move.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from typing import Final, NamedTuple

from ._fast import trick_pairs
from .actions import EXCHANGE, SING, TUTE_11, TUTE_12
from .cards import (
    BIT,
    POINTS,
    STRENGTH,
    STRONGER,
    SUIT_MASK,
    SUIT_OF,
    Card,
    Mask,
    cards_of,
    trick_winner,
)
from .determinize import Knowledge, Sample, constraints, knowledge, sample_from, to_state
from .events import HandResult
from .game import apply, legal_actions, pack_for
from .rules import Rules, Scoring, TuteEffect
from .search import follow_mask, rollout_values, solve
from .state import PLAYING, State
from .view import View, view

Bot = Callable[[Rules, View, random.Random], int]

_PAIR: Final = tuple(BIT[s * 10 + 9] | BIT[s * 10 + 8] for s in range(4))


def random_bot(rules: Rules, v: View, rng: random.Random) -> int:
    """Any legal action, uniformly."""
    if not v.legal:
        raise ValueError("the bot's seat has no legal action now")
    return rng.choice(v.legal)


# ---------------------------------------------------------------------------------------------
# easy: rules of thumb
# ---------------------------------------------------------------------------------------------


def declaration(v: View) -> int:
    """The declaration every level above ``random`` makes now, or -1 (play a card)."""
    return _declaration(v.legal, v.trump)


def _declaration(legal: tuple[int, ...], trump: int) -> int:
    for a in (TUTE_12, TUTE_11, EXCHANGE):
        if a in legal:
            return a
    sings = [a for a in legal if SING <= a < SING + 4]
    if not sings:
        return -1
    trump_sing = SING + trump
    return trump_sing if trump_sing in sings else sings[0]


def _cost(c: Card, trump: int, keep: Mask) -> int:
    """How much playing ``c`` gives away: points, trumps, strength, a pair kept for a cante."""
    cost = POINTS[c] * 16 + STRENGTH[c]
    if SUIT_OF[c] == trump:
        cost += 60
    if keep & BIT[c]:
        cost += 80
    return cost


def _cheapest(cards: Mask, trump: int, keep: Mask) -> Card:
    best = -1
    best_cost = 0
    for c in cards_of(cards):
        k = _cost(c, trump, keep)
        if best < 0 or k < best_cost:
            best, best_cost = c, k
    return best


def _beats(c: Card, w: Card, trump: int) -> bool:
    """Whether ``c`` beats the winning card ``w`` of a trick."""
    if SUIT_OF[c] == SUIT_OF[w]:
        return STRENGTH[c] > STRENGTH[w]
    return SUIT_OF[c] == trump


def easy_card(rules: Rules, v: View) -> Card:
    """The card the rules of thumb choose (the view's seat is on turn)."""
    return _easy_card(rules, v, constraints(rules, v))


def _easy_card(rules: Rules, v: View, lacks: tuple[Mask, ...]) -> Card:  # noqa: C901 - the easy level is its list of rules of thumb, in priority order
    """:func:`easy_card` given ``lacks``, what :func:`~engine.determinize.constraints` says of
    ``v`` (the same for every hand the seat may hold: inference asks it of many)."""
    me = v.seat
    assert me is not None
    n = v.players
    trump = v.trump
    hand = v.hand
    legal = 0
    for a in v.legal:
        if a < 40:
            legal |= BIT[a]
    if legal & (legal - 1) == 0:
        return (legal & -legal).bit_length() - 1
    played = 0
    for _, done, _ in v.history:
        for c in done:
            played |= BIT[c]
    for _, c in v.trick:
        played |= BIT[c]
    unseen = 0
    for c in pack_for(rules):
        unseen |= BIT[c]
    unseen &= ~(played | hand)
    # Pairs that can still be sung: keep them together.
    keep = 0
    sung = 0
    for _, s, _, _ in v.cantes:
        sung |= 1 << s
    can_sing = not (n == 2 and rules.cantes_only_with_stock and v.stock_size == 0)
    if can_sing:
        for s in range(4):
            if hand & _PAIR[s] == _PAIR[s] and not sung >> s & 1:
                keep |= _PAIR[s]
    # With a pair to sing, winning any trick is worth its cante.
    singing = keep != 0
    # A low trump for the last trick: the weakest trump, while other cards remain.
    trumps = hand & SUIT_MASK[trump]
    if trumps and hand.bit_count() > 2:
        low = (trumps & -trumps).bit_length() - 1
        for c in cards_of(trumps):
            if STRENGTH[c] < STRENGTH[low]:
                low = c
        keep |= BIT[low]
    # What the obligations showed each opponent lacks (``lacks``): a known void of a plain
    # suit with trumps still possible means that opponent may trump it.
    opponents = [o for o in range(n) if _side(n, o) != _side(n, me)]
    order = [(v.leader + i) % n for i in range(n)]

    def may_trump(c: Card, after: int) -> bool:
        """Whether an opponent playing after position ``after`` may trump plain ``c``."""
        for o in opponents:
            if order.index(o) <= after:
                continue
            may_hold = unseen & ~lacks[o]
            if not may_hold & SUIT_MASK[SUIT_OF[c]] and may_hold & SUIT_MASK[trump]:
                return True
        return False

    if not v.trick:
        # With four trumps or more, lead the master trump (arrastre: it draws a trump from
        # every seat that has one) while trumps are still unseen.
        if trumps.bit_count() >= 4 and unseen & SUIT_MASK[trump]:
            for c in cards_of(legal & trumps & ~keep):
                if not STRONGER[c] & unseen:
                    return c
        # Lead the master card of a plain suit with most points (nobody can head it) unless
        # an opponent is known to be void of the suit and may trump it.
        best = -1
        for c in cards_of(legal & ~SUIT_MASK[trump] & ~keep):
            master = not STRONGER[c] & unseen and not may_trump(c, 0)
            if master and POINTS[c] > 0 and (best < 0 or POINTS[c] > POINTS[best]):
                best = c
        if best >= 0:
            return best
        if singing:
            # Keep the lead to sing: any card nobody can head, the cheapest.
            sure = 0
            for c in cards_of(legal & ~keep):
                if not STRONGER[c] & unseen and (SUIT_OF[c] == trump or not may_trump(c, 0)):
                    sure |= BIT[c]
            if sure:
                return _cheapest(sure, trump, keep)
        return _cheapest(legal, trump, keep)
    cards = [c for _, c in v.trick]
    win_pos = trick_winner(cards, trump)
    win_card = cards[win_pos]
    my_pos = len(cards)
    last = my_pos == n - 1
    at_stake = 0
    for c in cards:
        at_stake += POINTS[c]
    partner_wins = n == 4 and my_pos - win_pos == 2
    if partner_wins:
        # Safe: nobody after me can head it (a plain master may be trumped only by an opponent
        # known to be void of its suit).
        safe = last or (
            not STRONGER[win_card] & unseen
            and (SUIT_OF[win_card] == trump or not may_trump(win_card, my_pos))
        )
        plain = legal & ~SUIT_MASK[trump]
        choices = plain if plain else legal
        if safe:
            # Throw points: the card with most points that is not kept.
            best = -1
            for c in cards_of(choices & ~keep):
                if (
                    best < 0
                    or POINTS[c] > POINTS[best]
                    or (POINTS[c] == POINTS[best] and STRENGTH[c] < STRENGTH[best])
                ):
                    best = c
            if best >= 0:
                return best
        return _cheapest(choices, trump, keep)
    winners = 0
    for c in cards_of(legal):
        if _beats(c, win_card, trump):
            winners |= BIT[c]
    if winners:
        if last:
            c = _cheapest(winners, trump, keep)
            if at_stake + POINTS[c] > 0 or SUIT_OF[c] != trump or (singing and not keep & BIT[c]):
                return c
        else:
            masters = 0
            for c in cards_of(winners):
                safe_suit = SUIT_OF[c] == trump or not may_trump(c, my_pos)
                if not STRONGER[c] & unseen and safe_suit:
                    masters |= BIT[c]
            if masters:
                return _cheapest(masters, trump, keep)
            if at_stake >= 10:
                return _cheapest(winners, trump, keep)
    return _cheapest(legal, trump, keep)


def easy_bot(rules: Rules, v: View, rng: random.Random) -> int:
    """Rules of thumb (see the module's documentation)."""
    if not v.legal:
        raise ValueError("the bot's seat has no legal action now")
    d = declaration(v)
    if d >= 0:
        return d
    if not any(a < 40 for a in v.legal):
        return v.legal[0]
    return easy_card(rules, v)


# ---------------------------------------------------------------------------------------------
# medium and hard: determinized search
# ---------------------------------------------------------------------------------------------


class Budget(NamedTuple):
    """What one search may spend."""

    samples: int
    """Deals sampled (each legal card is scored on each)."""
    solve_tricks: int
    """Use the exact solver once every hand holds at most this many cards (0: never); in 2p
    the solver takes over as soon as the stock is gone whatever this says."""
    node_limit: int
    """Cards the solver may try per sample before falling back to a playout."""
    time_s: float
    """Stop sampling after this long (the first sample always completes)."""
    tail_tricks: int = 0
    """Playouts with no stock solve the rest of the hand exactly once every hand holds at
    most this many cards (0: never), each solve within ``node_limit`` cards tried."""
    infer_eps: float = 0.0
    """Inference (0: off): weight each sampled deal by the likelihood of the cards the other
    seats played this hand had they played by the ``easy`` rules of thumb, each of their
    choices among ``k`` legal cards counting ``1 - infer_eps`` when the rules of thumb pick
    the card played and ``infer_eps / (k - 1)`` when not (:func:`likelihood`). 3p and 4p
    only: in 2p the draws would need the stock's order to replay the hand."""
    infer_pool: int = 1
    """With inference: deals drawn per deal scored. 1: every deal drawn is scored and its
    scores count by its weight; more: ``infer_pool * samples`` deals are drawn (within a
    quarter of ``time_s``) and ``samples`` of them, drawn again by weight, are scored."""
    assume_sing: int = 0
    """1: sample only deals in which the other seats held no pair they could have sung in a
    window that closed without a cante (every level sings at once: ``knowledge(..., sings=
    True)``); 0: the rules' constraints alone."""
    best_other: int = 0
    """3p, 1: score the solver's and the playouts' margins (the seat's points less both
    others', what the paranoid search computes) by the margin over the best other seat, the
    others' points still to come shared evenly between them (:class:`BestOther`), with the
    win bonus where the hand is won; 0: by the margin over both together."""
    tree: int = 0
    """1: information-set tree search (:meth:`SearchBot.tree_visits`) instead of scoring each
    card on each deal: ``iterations`` at most within ``time_s``, each on a fresh deal, down
    one tree of every seat's cards shared by all deals; 2: the same until the exact solver
    takes over (``solve_tricks``), then each card scored on each of ``samples`` deals; 0:
    each card scored on each deal."""
    iterations: int = 0
    """With ``tree``: the tree search's iterations at most."""
    tree_c: float = 0.7
    """With ``tree``: the exploration constant of the tree's UCB (utilities scaled to about
    -1..1)."""
    lookahead: int = 0
    """Playouts with no stock search the ``lookahead`` cards after the card scored (alpha-beta
    on the sample, each side best for itself) and play out from each line's end
    (:class:`~engine.search.Lookahead`); 0: the card is played out at once. Off in every
    level: it lowers the loss against the deal solved exactly, not the matches lost."""
    play_for_match: int = 0
    """0: score a hand by its point margin plus a bonus for winning it (:func:`utility`);
    1: by the chance of winning the match it leaves (:class:`MatchValue`: the game scores or
    match points carried, the target, a game or a match that this hand decides). 2p and 4p
    only; 3p keeps the margin (the paranoid solver gives no seat's own points)."""


def _side(n: int, seat: int) -> int:
    return seat % 2 if n == 4 else seat


def utility(rules: Rules, result: HandResult, side: int) -> float:
    """How good a finished hand is for ``side``: its margin over the best other side, plus a
    bonus for winning the hand (which is what counts under ``scoring = hands``)."""
    if result.tute_seat >= 0:
        return 150.0 if result.winner == side else -150.0
    totals = result.totals
    mine = totals[side]
    other = max(totals[s] for s in range(len(totals)) if s != side)
    bonus = 30.0 if rules.scoring is Scoring.HANDS else 10.0
    if result.capote and rules.scoring is Scoring.HANDS:
        bonus *= 2
    if result.winner == side:
        return mine - other + bonus
    if result.winner < 0:
        return float(mine - other)
    return mine - other - bonus


def race(target: int, a: int, b: int) -> float:
    """The chance that a side with ``a`` points of ``target`` gets there before one with
    ``b`` when each unit goes to either side with even odds."""
    if a >= target:
        return 1.0
    if b >= target:
        return 0.0
    need_a = target - a
    need_b = target - b
    # P(a's need_a wins come before b's need_b): a negative binomial sum.
    p = 0.0
    term = 0.5**need_a  # b won none of the first need_a - 1 + k units, k = 0
    for k in range(need_b):
        p += term
        term *= 0.5 * (need_a + k) / (k + 1)
    return p


_WIN: Final = 100.0
""":class:`MatchValue`'s scale: the match won is ``_WIN``, the match lost ``-_WIN``."""


class MatchValue:
    """A finished hand's value for ``side`` by the chance of winning the match it leaves,
    from ``-_WIN`` (lost) to ``_WIN`` (won), with a tenth of the hand's point margin to tell
    equal chances apart. Under ``scoring = points`` a game that no side has won yet goes to
    a side by its lead: even at equal scores, certain at a lead of the target. Under ``scoring
    = hands`` every hand still to come is a coin toss (:func:`race`). Two sides only (2p, 4p).
    """

    def __init__(self, state: State, side: int) -> None:
        rules = state.rules
        self.rules = rules
        self.side = side
        self.other = 1 - side
        self.points = rules.scoring is Scoring.POINTS
        self.scores = state.game_scores
        self.match_points = state.match_points
        self.games_won = state.games_won
        sung = 0
        for _, _, p, _ in state.cantes:
            sung += p
        self.hand_sum = 130 + sung
        """A hand's totals together, with the cantes sung so far (a margin's two sides)."""

    def _match(self, won: float) -> float:
        """The match chance once this game goes to ``side`` with chance ``won``."""
        g = self.rules.games_to_win
        me, other = self.games_won[self.side], self.games_won[self.other]
        return won * race(g, me + 1, other) + (1.0 - won) * race(g, me, other + 1)

    def of_totals(self, mine: int, theirs: int, winner: int, gain: int) -> float:
        """The value of a hand that gave the two sides ``mine`` and ``theirs`` points and
        went to side ``winner`` (-1: nobody), worth ``gain`` match points (hands scoring;
        under points scoring the game scores decide, ``winner`` and ``gain`` are unused)."""
        margin = 0.1 * (mine - theirs)
        if self.points:
            a = self.scores[self.side] + mine
            b = self.scores[self.other] + theirs
            target = self.rules.target_points
            if max(a, b) >= target:
                # The game is over: the higher score wins it (a tie goes by the last trick,
                # which a margin does not tell: even odds).
                p = self._match(1.0 if a > b else 0.0 if a < b else 0.5)
            else:
                lead = (a - b) / target
                p = self._match(min(1.0, max(0.0, 0.5 + 0.5 * lead)))
            return _WIN * (2.0 * p - 1.0) + margin
        target = self.rules.target_match_points
        me, other = self.match_points[self.side], self.match_points[self.other]
        if winner == self.side:
            p = race(target, me + gain, other)
        elif winner >= 0:
            p = race(target, me, other + gain)
        else:
            p = race(target, me, other)
        return _WIN * (2.0 * p - 1.0) + margin

    def of_result(self, result: HandResult) -> float:
        """The value of a hand the engine finished."""
        rules = self.rules
        if result.tute_seat >= 0:
            won = result.winner == self.side
            if rules.tute_effect is TuteEffect.WINS_MATCH:
                return _WIN if won else -_WIN
            if self.points:
                return _WIN * (2.0 * self._match(1.0 if won else 0.0) - 1.0)
            return self.of_totals(0, 0, result.winner, rules.tute_unit_value)
        gain = rules.capote_value if result.capote else 1
        totals = result.totals
        return self.of_totals(totals[self.side], totals[self.other], result.winner, gain)

    def of_margin(self, margin: int) -> float:
        """The value of a hand that ends ``margin`` points up (the solver's or a playout's
        measure: the cantes still to come are not in :attr:`hand_sum`, a tie of points goes
        to nobody)."""
        mine = (self.hand_sum + margin) // 2
        theirs = self.hand_sum - mine
        winner = self.side if margin > 0 else self.other if margin < 0 else -1
        return self.of_totals(mine, theirs, winner, 1)


class BestOther:
    """3p: a margin over both other seats (what :func:`engine.search.solve` and the
    playouts give) as a value by the margin over the better of them (who wins a 3p hand),
    with :func:`utility`'s bonus by its sign. From the seats' points now, the seat's final
    points and the two others' together follow from the margin (the cantes still to come
    left out); the others' points still to come are taken as shared evenly, so the value
    grows with the margin and keeps the solver's order."""

    def __init__(self, state: State, side: int) -> None:
        rules = state.rules
        pts = list(state.won_points)
        for seat, _, p, _ in state.cantes:
            pts[seat] += p
        self.rules = rules
        self.side = side
        self.others = [pts[s] for s in range(3) if s != side]
        self.total = 130 + sum(pts) - sum(state.won_points)
        self.bonus = 30.0 if rules.scoring is Scoring.HANDS else 10.0

    def of_margin(self, margin: int) -> float:
        mine = (self.total + margin) / 2
        others = self.total - mine
        a, b = self.others
        best = max(max(a, b) + max(0.0, others - a - b) / 2, others / 2)
        d = mine - best
        if d > 0:
            return d + self.bonus
        if d < 0:
            return d - self.bonus
        return 0.0

    def of_result(self, result: HandResult) -> float:
        return utility(self.rules, result, self.side)


def playout(state: State, side: int, value: MatchValue | BestOther | None = None) -> float:
    """Play the hand out with the ``easy`` policy for every seat; its utility for ``side``
    (by ``value`` when given)."""
    rules = state.rules
    hand_no = state.hand_no
    rng = _NO_RNG
    while state.status == PLAYING and state.hand_no == hand_no:
        seat = state.turn
        a = easy_bot(rules, view(state, seat), rng)
        state, _ = apply(state, seat, a)
    result = state.last_result
    assert result is not None
    if value is not None:
        return value.of_result(result)
    return utility(rules, result, side)


_NO_RNG: Final = random.Random(0)
"""The easy policy draws nothing; playouts pass this one for the signature's sake."""


def _current_margin(state: State, side: int) -> int:
    n = state.rules.players
    pts = list(state.won_points)
    for seat, _, p, _ in state.cantes:
        pts[_side(n, seat)] += p
    mine = pts[side]
    return (
        mine - sum(pts[s] for s in range(len(pts)) if s != side)
        if n == 3
        else (mine - pts[1 - side])
    )


class Decision(NamedTuple):
    """A card another seat chose earlier in the hand, as inference replays it."""

    seat: int
    card: Card
    later: Mask
    """The cards ``seat`` played from this choice on, this card included: its hand then is its
    hand now (in a sampled deal) with these."""
    prefix: tuple[Card, ...]
    """The cards played to the trick before this one."""
    template: View
    """The seat's view then, but for its hand and legal actions."""
    lacks: tuple[Mask, ...]
    """What the obligations of play had shown by then (:func:`constraints` of ``template``)."""


def decisions(rules: Rules, v: View) -> list[Decision]:
    """The cards the seats other than the viewer played this hand, with what each seat saw
    when it played them: what :func:`likelihood` replays. In 3p and 4p every card is dealt
    and no exchange exists, so a seat's hand at a past trick is its hand now with the cards
    it played since; the cantes change no hand. Empty in 2p (the draws would need the
    stock's order, which no sample keeps for past tricks)."""
    me = v.seat
    n = v.players
    if n == 2 or me is None:
        return []
    first = v.trick_no - len(v.history)
    tricks: list[tuple[int, tuple[Card, ...]]] = [(leader, cards) for leader, cards, _ in v.history]
    if v.trick:
        tricks.append((v.leader, tuple(c for _, c in v.trick)))
    later = [0] * n
    found: list[tuple[int, int, int, Card, Mask]] = []
    for t in range(len(tricks) - 1, -1, -1):
        leader, cards = tricks[t]
        for pos in range(len(cards) - 1, -1, -1):
            seat = (leader + pos) % n
            c = cards[pos]
            later[seat] |= BIT[c]
            if seat != me:
                found.append((t, pos, seat, c, later[seat]))
    found.reverse()
    out: list[Decision] = []
    for t, pos, seat, c, played in found:
        leader, cards = tricks[t]
        trick_no = first + t
        prefix = cards[:pos]
        template = v._replace(
            seat=seat,
            hand=0,
            legal=(),
            history=v.history[:t],
            trick=trick_pairs(n, leader, prefix) if prefix else (),
            leader=leader,
            turn=seat,
            trick_no=trick_no,
            cantes=tuple(x for x in v.cantes if x[3] <= trick_no),
            stock_size=0,
            turned_card=-1,
        )
        out.append(Decision(seat, c, played, prefix, template, constraints(rules, template)))
    return out


def likelihood(
    rules: Rules,
    found: list[Decision],
    hands: tuple[Mask, ...],
    eps: float,
    cache: dict[int, Card],
) -> float:
    """How likely the cards seen are with the hidden hands ``hands`` (a sampled deal's) had
    every other seat played by the ``easy`` rules of thumb, each choice among ``k > 1`` legal
    cards right with probability ``1 - eps`` and each other card with ``eps / (k - 1)``.
    ``cache`` keeps the rules of thumb's choices across deals (one per choice and hand)."""
    w = 1.0
    trump = found[0].template.trump if found else 0
    for i in range(len(found)):
        d = found[i]
        hand = hands[d.seat] | d.later
        legal = follow_mask(rules, hand, d.prefix, trump, len(d.prefix)) if d.prefix else hand
        k = legal.bit_count()
        if k < 2:
            continue
        key = hand << 6 | i
        c = cache.get(key, -1)
        if c < 0:
            c = _easy_card(rules, d.template._replace(hand=hand, legal=cards_of(legal)), d.lacks)
            cache[key] = c
        w *= (1.0 - eps) if c == d.card else eps / (k - 1)
    return w


def _weighted_samples(
    rules: Rules,
    v: View,
    k: Knowledge,
    rng: random.Random,
    budget: Budget,
    clock: Callable[[], float],
) -> list[tuple[Sample, float]] | None:
    """The deals to score and their weights under inference, or None (inference off, or
    nothing to infer from: sample as usual)."""
    if budget.infer_eps <= 0.0:
        return None
    found = decisions(rules, v)
    if not found:
        return None
    eps = budget.infer_eps
    pool = max(1, budget.infer_pool)
    stop = clock() + budget.time_s / 4 if pool > 1 else 0.0
    cache: dict[int, Card] = {}
    drawn: list[Sample] = []
    weights: list[float] = []
    total = 0.0
    for i in range(budget.samples * pool):
        s = sample_from(k, rng)
        w = likelihood(rules, found, s.hands, eps, cache)
        drawn.append(s)
        weights.append(w)
        total += w
        if pool > 1 and i + 1 >= budget.samples and clock() > stop:
            break
    if total <= 0.0:
        return [(s, 1.0) for s in drawn]
    if pool == 1:
        return [(drawn[i], weights[i] / total) for i in range(len(drawn))]
    # Systematic resampling: ``samples`` draws by weight, one random offset; a deal drawn
    # more than once is scored once and counts as often as it was drawn.
    m = budget.samples
    step = total / m
    u = rng.random() * step
    out: list[tuple[Sample, float]] = []
    acc = 0.0
    taken = 0
    for i in range(len(drawn)):
        acc += weights[i]
        count = 0
        while u < acc and taken < m:
            count += 1
            taken += 1
            u += step
        if count:
            out.append((drawn[i], float(count)))
    return out


class SearchBot:
    """Determinized search with a budget: ``medium`` and ``hard``. ``clock`` reads the time
    that ``budget.time_s`` bounds: real time by default (what a table waits for),
    ``time.process_time`` for the CPU time of one core (what the tournament gives)."""

    def __init__(
        self,
        budget: Budget,
        clock: Callable[[], float] = time.perf_counter,
        *,
        by_players: Mapping[int, Budget] | None = None,
    ) -> None:
        self.budget = budget
        """The budget of a table of any number of players not in ``by_players``."""
        self.clock = clock
        self.by_players: dict[int, Budget] = dict(by_players or {})
        """The budget of a table of this many players, where it is not ``budget``."""

    def budget_for(self, players: int) -> Budget:
        """The budget of a move at a table of ``players``."""
        return self.by_players.get(players, self.budget)

    def remade(
        self, change: Callable[[Budget], Budget], clock: Callable[[], float] | None = None
    ) -> SearchBot:
        """The same level with ``change`` made to each of its budgets (and ``clock``, if
        given, for its time)."""
        return SearchBot(
            change(self.budget),
            clock or self.clock,
            by_players={n: change(b) for n, b in self.by_players.items()},
        )

    def __call__(self, rules: Rules, v: View, rng: random.Random) -> int:
        if not v.legal:
            raise ValueError("the bot's seat has no legal action now")
        d = declaration(v)
        if d >= 0:
            return d
        cards = [a for a in v.legal if a < 40]
        if not cards:
            return v.legal[0]
        if len(cards) == 1:
            return cards[0]
        return self.choose(rules, v, rng, cards)

    def scores(self, rules: Rules, v: View, rng: random.Random, cards: list[Card]) -> list[float]:
        """The mean value of each card over the samples."""
        budget = self.budget_for(v.players)
        me = v.seat
        assert me is not None
        n = v.players
        side = _side(n, me)
        clock = self.clock
        deadline = clock() + budget.time_s
        k = knowledge(rules, v, sings=budget.assume_sing > 0)
        exact = self._exact(v)
        known = k.hidden == 0 or (n == 2 and v.stock_size == 0)
        planned = _weighted_samples(rules, v, k, rng, budget, clock) if not known else None
        rounds = len(planned) if planned is not None else budget.samples
        totals = [0.0] * len(cards)
        match = budget.play_for_match > 0 and n != 3
        best_other = budget.best_other > 0 and n == 3
        value: MatchValue | BestOther | None = None
        for i in range(rounds):
            drawn, w = planned[i] if planned is not None else (sample_from(k, rng), 1.0)
            state = to_state(rules, v, drawn)
            if value is None and (match or best_other):
                # what it reads is public: any sample's
                value = MatchValue(state, side) if match else BestOther(state, side)
            values: dict[Card, int] | None = None
            if exact:
                values = solve(state, side, budget.node_limit)
                exact = values is not None  # too big for the budget: playouts from now on
            if values is not None:
                base = _current_margin(state, side)
                for j, c in enumerate(cards):
                    m = base + values[c]
                    totals[j] += w * (
                        value.of_margin(m) if value is not None else _solved_utility(rules, m)
                    )
                if known:
                    return totals
            elif v.stock_size == 0:
                base = _current_margin(state, side)
                got = rollout_values(
                    state, side, cards, budget.tail_tricks, budget.node_limit, budget.lookahead
                )
                for j, m in enumerate(got):
                    totals[j] += w * (
                        value.of_margin(base + m)
                        if value is not None
                        else _solved_utility(rules, base + m)
                    )
            else:
                for j, c in enumerate(cards):
                    after, _ = apply(state, me, c)
                    if after.status == PLAYING and after.hand_no == state.hand_no:
                        totals[j] += w * playout(after, side, value)
                    else:
                        result = after.last_result
                        assert result is not None
                        totals[j] += w * (
                            value.of_result(result)
                            if value is not None
                            else utility(rules, result, side)
                        )
            if i + 1 < rounds and clock() > deadline:
                break
        return totals

    def _exact(self, v: View) -> bool:
        """Does the exact solver score the cards now (from its first sample on)?"""
        solve_tricks = self.budget_for(v.players).solve_tricks
        return v.stock_size == 0 and (
            (v.players == 2 and solve_tricks > 0) or max(v.hand_sizes) <= solve_tricks
        )

    def tree_visits(
        self, rules: Rules, v: View, rng: random.Random, cards: list[Card]
    ) -> list[float]:
        """Information-set Monte Carlo tree search from the seat's point of view (single
        observer IS-MCTS, Cowling, Powley and Whitehouse 2012): each iteration draws a deal
        consistent with the view and walks one tree of card choices (every seat's, in the
        order they are played) that all deals share. At a node the cards the deal allows are
        compared by UCB, each counted as available once per deal in which it was; a card not
        tried yet is tried first (one new node per iteration), and from there the easy policy
        plays the hand out. Each node keeps the value of the hand to the side that chose its
        card, so every seat picks what is best for its own side. Declarations are made as
        every level makes them (:func:`declaration`), outside the tree. Returns how often
        each of ``cards`` was chosen at the root (``iterations`` at most, the first always
        completed, then as many as ``time_s`` allows)."""
        budget = self.budget_for(v.players)
        n = v.players
        clock = self.clock
        deadline = clock() + budget.time_s
        k = knowledge(rules, v, sings=budget.assume_sing > 0)
        c = budget.tree_c
        root = _Node()
        iterations = max(1, budget.iterations)
        for i in range(iterations):
            state = to_state(rules, v, sample_from(k, rng))
            hand_no = state.hand_no
            node = root
            path: list[tuple[_Node, int]] = []
            fresh = False
            while state.status == PLAYING and state.hand_no == hand_no:
                seat = state.turn
                if fresh:  # past the new node: the easy policy to the end of the hand
                    a = easy_bot(rules, view(state, seat), _NO_RNG)
                    state, _ = apply(state, seat, a)
                    continue
                legal = legal_actions(state, seat)
                d = _declaration(legal, state.trump)
                if d < 0 and min(legal) >= 40:
                    d = legal[0]
                if d >= 0:
                    state, _ = apply(state, seat, d)
                    continue
                child = _select(node, legal, c, rng)
                if child.visits == 0:
                    fresh = True
                path.append((child, _side(n, seat)))
                node = child
                state, _ = apply(state, seat, child.card)
            result = state.last_result
            assert result is not None
            for nd, side in path:
                nd.visits += 1
                nd.total += utility(rules, result, side) / _TREE_SCALE
            if i + 1 < iterations and clock() > deadline:
                break
        tried = root.children
        return [float(tried[card].visits) if card in tried else 0.0 for card in cards]

    def choose(self, rules: Rules, v: View, rng: random.Random, cards: list[Card]) -> Card:
        tree = self.budget_for(v.players).tree
        if tree and not (tree == 2 and self._exact(v)):
            totals = self.tree_visits(rules, v, rng, cards)
        else:
            totals = self.scores(rules, v, rng, cards)
        best = 0
        for j in range(1, len(cards)):
            if totals[j] > totals[best]:
                best = j
        return cards[best]


_TREE_SCALE: Final = 150.0
"""Utilities of a hand divided by this in the tree (a tute is worth 150)."""


class _Node:
    """A card chosen in :meth:`SearchBot.tree_visits`'s tree: visits, times available, the
    summed value to the side that chose it, and the cards that followed it."""

    __slots__ = ("avail", "card", "children", "total", "visits")

    def __init__(self, card: Card = -1) -> None:
        self.card = card
        self.visits = 0
        self.avail = 0
        self.total = 0.0
        self.children: dict[Card, _Node] = {}
        """The cards played next, by card."""


def _select(node: _Node, legal: tuple[int, ...], c: float, rng: random.Random) -> _Node:
    """Among the cards of ``legal`` (those this deal allows), a card not tried yet at random,
    else the one of best UCB; each allowed card counts one more availability."""
    children = node.children
    allowed: list[_Node] = []
    untried: list[int] = []
    for a in legal:
        if a >= 40:
            continue
        ch = children.get(a)
        if ch is None:
            untried.append(a)
        else:
            allowed.append(ch)
    if untried:
        card = untried[rng.randrange(len(untried))] if len(untried) > 1 else untried[0]
        new = children[card] = _Node(card)
        for ch in allowed:
            ch.avail += 1
        new.avail = 1
        return new
    best = allowed[0]
    best_u = -1e18
    for ch in allowed:
        ch.avail += 1
        u = ch.total / ch.visits + c * math.sqrt(math.log(ch.avail) / ch.visits)
        if u > best_u:
            best, best_u = ch, u
    return best


def _solved_utility(rules: Rules, margin: int) -> float:
    """The utility of a final margin found by the solver (the hand's winner by its sign)."""
    bonus = 30.0 if rules.scoring is Scoring.HANDS else 10.0
    if margin > 0:
        return margin + bonus
    if margin < 0:
        return margin - bonus
    return 0.0


MEDIUM: Final = Budget(samples=40, solve_tricks=0, node_limit=0, time_s=0.04)
HARD: Final = Budget(samples=120, solve_tricks=6, node_limit=100_000, time_s=0.6, tail_tricks=5)
HARD_4P: Final = HARD._replace(solve_tricks=4, tail_tricks=0)
"""``hard`` at a 4p table: exact from 4 cards a hand, playouts without exact tails. As strong
there as :data:`HARD` (even head to head, the same against ``medium``) at a thirteenth of the
CPU a move (README, Bots). In 2p neither setting counts: the solver takes over once the stock
is gone."""
HARD_3P: Final = HARD._replace(samples=400, solve_tricks=4, tail_tricks=3)
"""``hard`` at a 3p table: exact from 4 cards a hand and the playouts' last 3 tricks, over
more samples. Even with :data:`HARD` head to head, a point better against ``medium``, at half
the CPU a move (README, Bots); without exact tails it was weaker in 3p."""

BOTS: dict[str, Bot] = {
    "random": random_bot,
    "easy": easy_bot,
    "medium": SearchBot(MEDIUM),
    "hard": SearchBot(HARD, by_players={3: HARD_3P, 4: HARD_4P}),
}
"""Bot levels by name, weakest first."""

TIME_BUDGET_S: dict[str, float] = {
    "random": 0.0,
    "easy": 0.0,
    "medium": MEDIUM.time_s,
    "hard": HARD.time_s,
}
"""The longest a level thinks for one move (beyond a first sample's work)."""

RATINGS: Final[dict[str, float]] = {"random": 0.0, "easy": 200.0, "medium": 291.0, "hard": 306.0}
"""Each level's rating on one Elo-like scale, ``random`` at 0: a Bradley-Terry fit to the bot
tournament's round robin of the levels as they are (2026-12-07), the 4p ``parejas``, 2p
``corriente-8`` and 3p ``tres`` matches pooled (README, "Bots", run W; its JSON lines are in
``benchmarks/results``). A difference of 400 means odds of 10 to 1 of winning a match."""

RATINGS_CI95: Final[dict[str, tuple[float, float]]] = {
    "random": (0.0, 0.0),
    "easy": (179.0, 221.0),
    "medium": (269.0, 315.0),
    "hard": (284.0, 332.0),
}
"""The 95% interval of each of :data:`RATINGS` (a parametric bootstrap of the same fit)."""


def level_for(rating: float) -> str:
    """The level whose rating is nearest ``rating`` (the weaker one on a tie): for filling a
    seat with a bot of a player's level."""
    best = "random"
    for level in BOTS:
        if abs(RATINGS[level] - rating) < abs(RATINGS[best] - rating):
            best = level
    return best
