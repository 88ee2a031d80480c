"""Exact endgame solver: alpha-beta over bit masks with a transposition table.

Once no card is left to draw (3p and 4p always; 2p once the stock is gone) the play of a
known deal is a game of perfect information. :func:`solve` gives, for each legal card of the
seat on turn, the best point margin its side can force from now to the end of the hand,
against the other sides playing to minimise it (in 3p the two others count as one side:
"paranoid" search). The margin counts card points, las diez de últimas and cantes: a trick's
winner sings at once the best cante the rules allow it (the 40 first; one per trick under
``cantes_per_trick = one``), which never costs anything in a game of perfect information.
Tutes are left out (they are decided before a card is played).

The obligations of play are RULES.md §5 exactly as :func:`engine.game._follow_cards` applies
them without a stock; the tests check the solver against a brute force over the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

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
    trick_standing,
    trick_winner,
)
from .rules import CannotOvertrump, CantesPerTrick, FortyBeforeTwenty, Rules
from .state import State

_PAIR: Final = tuple(BIT[s * 10 + 9] | BIT[s * 10 + 8] for s in range(4))
_EXACT: Final = 0
_LOWER: Final = 1
_UPPER: Final = 2
_ORDER_KEY: Final = tuple(STRENGTH[c] * 4 + POINTS[c] for c in range(40))
_BLANK: Final = sum(BIT[c] for c in range(40) if POINTS[c] == 0)
"""The cards worth no points (2, 4, 5, 6, 7): two of one suit in one hand with no live card
between them are worth the same in every line of play."""
_SUIT_POINTS: Final = tuple(sum(POINTS[i] for i in range(10) if m >> i & 1) for m in range(1024))
"""The card points of a suit's 10-bit slice of a mask."""
_BETWEEN: Final = tuple(
    tuple(STRONGER[a] & ~STRONGER[b] & ~BIT[b] for b in range(40)) for a in range(40)
)
"""``_BETWEEN[a][b]``: the cards of the suit stronger than ``a`` and weaker than ``b``."""


def follow_mask(rules: Rules, hand: Mask, trick: Sequence[Card], trump: int, seat_pos: int) -> Mask:
    """The cards of ``hand`` its holder may play to ``trick`` with no stock left (§5)."""
    led = trick[0]
    led_suit = SUIT_OF[led]
    win, win_pos, best_led, trumped = trick_standing(trick, trump)
    in_led = hand & SUIT_MASK[led_suit]
    if rules.partner_relief and rules.players == 4 and seat_pos - win_pos == 2:
        return in_led if in_led else hand
    if in_led:
        if led_suit == trump or not trumped or rules.head_led_suit_when_trumped:
            beat = in_led & STRONGER[win if led_suit == trump else best_led]
            if beat:
                return beat
        return in_led
    trumps = hand & SUIT_MASK[trump]
    if not trumps:
        return hand
    if not trumped:
        return trumps
    over = trumps & STRONGER[win]
    if over:
        return over
    if rules.cannot_overtrump is CannotOvertrump.MUST_TRUMP:
        return trumps
    return hand


class Solver:
    """One position's search; ``nodes`` counts the cards tried (for budgets and figures)."""

    def __init__(self, state: State, max_side: int, node_limit: int = 0) -> None:
        rules = state.rules
        self.rules = rules
        self.n = rules.players
        self.trump = state.trump
        self.max_side = max_side
        self.hands = list(state.hands)
        self.trick = list(state.trick)
        self.leader = state.leader
        self.sung = state.sung_suits
        self.sang_twenty = state.sang_twenty
        self.tt: dict[tuple[int, ...], tuple[int, int, Card]] = {}
        self.nodes = 0
        self.node_limit = node_limit
        self.aborted = False
        self.sings = rules.players != 2 or not rules.cantes_only_with_stock
        self.one_cante = rules.cantes_per_trick is CantesPerTrick.ONE

    def side(self, seat: int) -> int:
        if self.n == 4:
            return seat % 2
        return seat

    def _sign(self, seat: int) -> int:
        return 1 if self.side(seat) == self.max_side else -1

    def _cantes(self, winner: int) -> int:
        """Sing what the winner may (it is the leader of the next trick): the points sung."""
        if not self.sings:
            return 0
        hand = self.hands[winner]
        trump = self.trump
        fbt = self.rules.forty_before_twenty
        got = 0
        while True:
            pick = -1
            tp = _PAIR[trump]
            strict_barred = fbt is FortyBeforeTwenty.STRICT and self.sang_twenty >> winner & 1
            forty_open = hand & tp == tp and not self.sung >> trump & 1
            if forty_open and not strict_barred:
                pick = trump
            else:
                # No 40 to sing now: a 20 is open (a 40 barred by strict bars no 20).
                for s in range(4):
                    if s != trump and hand & _PAIR[s] == _PAIR[s] and not self.sung >> s & 1:
                        pick = s
                        break
            if pick < 0:
                return got
            self.sung |= 1 << pick
            if pick == trump:
                got += 40
            else:
                got += 20
                self.sang_twenty |= 1 << winner
            if self.one_cante:
                return got

    def moves(self) -> Mask:
        seat = (self.leader + len(self.trick)) % self.n
        hand = self.hands[seat]
        if not self.trick:
            return hand
        return follow_mask(self.rules, hand, self.trick, self.trump, len(self.trick))

    def distinct(self, moves: Mask) -> Mask:
        """``moves`` less the cards equivalent to a weaker one kept: a blank card (no points)
        with a weaker blank of its suit in the same hand and no card between them still in
        play (in a hand or in the trick) wins and loses exactly the same tricks."""
        blanks = moves & _BLANK
        if blanks & (blanks - 1) == 0:
            return moves
        live = 0
        for h in self.hands:
            live |= h
        for c in self.trick:
            live |= BIT[c]
        out = moves
        for s in range(4):
            z = blanks & SUIT_MASK[s]
            if z & (z - 1) == 0:
                continue
            prev = -1
            for c in cards_of(z):  # card-number order is strength order among blanks
                if prev >= 0 and not _BETWEEN[prev][c] & live:
                    out &= ~BIT[c]
                prev = c
        return out

    def value_of(self, card: Card) -> int:
        """The margin the max side can force after the seat on turn plays ``card``."""
        return self._play(card, -10_000, 10_000)

    def root_values(self) -> dict[Card, int]:
        """Every legal card of the seat on turn with its exact value (an equivalent card,
        see :meth:`distinct`, gets the value of the weaker one it equals)."""
        moves = self.moves()
        kept = self.distinct(moves)
        out: dict[Card, int] = {}
        rep = [-1, -1, -1, -1]  # per suit: the last blank kept
        for c in cards_of(moves):
            if kept & BIT[c]:
                out[c] = self.value_of(c)
                if BIT[c] & _BLANK:
                    rep[SUIT_OF[c]] = c
            else:
                out[c] = out[rep[SUIT_OF[c]]]
        return out

    def _play(self, card: Card, alpha: int, beta: int) -> int:
        n = self.n
        seat = (self.leader + len(self.trick)) % n
        bit = BIT[card]
        self.nodes += 1
        self.hands[seat] &= ~bit
        self.trick.append(card)
        if len(self.trick) < n:
            val = self._search(alpha, beta)
        else:
            trick = self.trick
            winner = (self.leader + trick_winner(trick, self.trump)) % n
            pts = 0
            for c in trick:
                pts += POINTS[c]
            leader, sung, sang = self.leader, self.sung, self.sang_twenty
            self.trick = []
            self.leader = winner
            left = False
            for h in self.hands:
                if h:
                    left = True
                    break
            if left:
                pts += self._cantes(winner)
            else:
                pts += 10
            gain = pts * self._sign(winner)
            val = gain + (self._search(alpha - gain, beta - gain) if left else 0)
            self.trick = trick
            self.leader, self.sung, self.sang_twenty = leader, sung, sang
        self.trick.pop()
        self.hands[seat] |= bit
        return val

    def _bound(self) -> int:
        """At a trick's start: the most the margin can still move either way (the card
        points in play, las diez de últimas and every cante some hand holds the pair of)."""
        live = 0
        for h in self.hands:
            live |= h
        bound = (
            _SUIT_POINTS[live & 0x3FF]
            + _SUIT_POINTS[(live >> 10) & 0x3FF]
            + _SUIT_POINTS[(live >> 20) & 0x3FF]
            + _SUIT_POINTS[live >> 30]
            + 10
        )
        if self.sings:
            for s in range(4):
                if self.sung >> s & 1:
                    continue
                pair = _PAIR[s]
                for h in self.hands:
                    if h & pair == pair:
                        bound += 40 if s == self.trump else 20
                        break
        return bound

    def _ordered(self, moves: Mask, seat: int, hint: Card) -> list[Card]:
        """``moves`` in the order to try them: the table's best card first, then a lead from
        the strongest down; a follower whose side wins the trick throws points first, any
        other follower tries its cheapest winning card first, then its cheapest loser."""
        trick = self.trick
        keys: list[int] = []
        if not trick:
            for c in cards_of(moves):
                k = 0 if c == hint else 64 - _ORDER_KEY[c]
                keys.append(k * 64 + c)
        else:
            trump = self.trump
            win_pos = trick_winner(trick, trump)
            win = trick[win_pos]
            ws = SUIT_OF[win]
            ours = self.side((self.leader + win_pos) % self.n) == self.side(seat)
            for c in cards_of(moves):
                cs = SUIT_OF[c]
                beats = STRENGTH[c] > STRENGTH[win] if cs == ws else cs == trump
                if ours:
                    k = 100 + STRENGTH[c] if beats else 20 - POINTS[c] + (40 if cs == trump else 0)
                elif beats:
                    k = STRENGTH[c]
                else:
                    k = 20 + POINTS[c] * 4 + STRENGTH[c] + (40 if cs == trump else 0)
                keys.append(k * 64 + c)
        keys.sort()
        return [k & 63 for k in keys]

    def _search(self, alpha: int, beta: int) -> int:  # noqa: C901 - alpha-beta with its table, bounds and move ordering in one frame (the hot path)
        if self.node_limit and self.nodes > self.node_limit:
            self.aborted = True
            return 0
        key: tuple[int, ...] = ()
        hint = -1
        if not self.trick:
            bound = self._bound()
            if bound <= alpha:
                return bound
            if -bound >= beta:
                return -bound
            key = (*self.hands, self.leader, self.sung, self.sang_twenty)
            hit = self.tt.get(key)
            if hit is not None:
                value, flag, hint = hit
                if flag == _EXACT:
                    return value
                if flag == _LOWER and value >= beta:
                    return value
                if flag == _UPPER and value <= alpha:
                    return value
        seat = (self.leader + len(self.trick)) % self.n
        maximizing = self.side(seat) == self.max_side
        cards = self._ordered(self.distinct(self.moves()), seat, hint)
        a0, b0 = alpha, beta
        best = -100_000 if maximizing else 100_000
        best_card = -1
        for c in cards:
            v = self._play(c, alpha, beta)
            if maximizing:
                if v > best:
                    best, best_card = v, c
                if best > alpha:
                    alpha = best
            else:
                if v < best:
                    best, best_card = v, c
                if best < beta:
                    beta = best
            if alpha >= beta:
                break
        if key and not self.aborted:
            if best <= a0:
                self.tt[key] = (best, _UPPER, best_card)
            elif best >= b0:
                self.tt[key] = (best, _LOWER, best_card)
            else:
                self.tt[key] = (best, _EXACT, best_card)
        return best


def solve(state: State, max_side: int, node_limit: int = 0) -> dict[Card, int] | None:
    """Each legal card of the seat on turn with the margin (for ``max_side``) it forces.

    ``state`` must be a card play with no stock left. ``None`` when ``node_limit`` (> 0)
    cards were tried before the answer was known.
    """
    solver = Solver(state, max_side, node_limit)
    values = solver.root_values()
    if solver.aborted:
        return None
    return values


class Rollout(Solver):
    """A quick playout of a known deal with no stock: every seat plays a rule of thumb that
    sees every hand (it is a sample's perfect information), on bit masks, without the engine.

    The rule of thumb: win a trick holding points with the cheapest card nobody after can
    beat, throw points on a partner's trick nobody after can beat, lead a card nobody can
    beat when it holds points, otherwise give the cheapest card (keeping an unsung rey and
    caballo together and trumps back). Cantes and las diez de últimas count as in
    :class:`Solver`.
    """

    def __init__(
        self,
        state: State,
        max_side: int,
        record: bool = False,
        solve_tricks: int = 0,
        node_limit: int = 0,
    ) -> None:
        super().__init__(state, max_side)
        self.record = record
        self.line: list[Card] = []
        """With ``record``: the cards the rule of thumb played, in order (for checks)."""
        self.solve_tricks = solve_tricks
        """Once a trick is to be led with every hand at most this long (0: never), the rest
        of the hand is solved exactly instead of played by the rule of thumb."""
        self.tail_limit = node_limit
        """Cards one such solve may try (0: no limit); past it the rule of thumb goes on."""
        self.solved = 0
        """How many playouts ended in an exact solve."""

    def margin_after(self, card: Card) -> int:
        """The margin for the max side from now to the end of the hand once the seat on turn
        has played ``card`` and every seat then plays the rule of thumb."""
        hands, trick = list(self.hands), list(self.trick)
        leader, sung, sang = self.leader, self.sung, self.sang_twenty
        n = self.n
        total = 0
        c = card
        while True:
            seat = (self.leader + len(self.trick)) % n
            self.hands[seat] &= ~BIT[c]
            self.trick.append(c)
            if len(self.trick) == n:
                won = self.trick
                winner = (self.leader + trick_winner(won, self.trump)) % n
                pts = 0
                for x in won:
                    pts += POINTS[x]
                self.trick = []
                self.leader = winner
                left = False
                for h in self.hands:
                    if h:
                        left = True
                        break
                if left:
                    pts += self._cantes(winner)
                else:
                    pts += 10
                total += pts * self._sign(winner)
                if not left:
                    break
                if self.solve_tricks and max(self.hands).bit_count() <= self.solve_tricks:
                    tail = self._tail()
                    if tail is not None:
                        total += tail
                        break
            c = self.policy((self.leader + len(self.trick)) % n)
            if self.record:
                self.line.append(c)
        self.hands, self.trick = hands, trick
        self.leader, self.sung, self.sang_twenty = leader, sung, sang
        return total

    def _tail(self) -> int | None:
        """The exact margin from here (a trick about to be led), or ``None`` past the node
        limit. Positions solved before in this rollout's deal are looked up, not solved."""
        self.nodes = 0
        self.node_limit = self.tail_limit
        value = self._search(-10_000, 10_000)
        if self.aborted:
            self.aborted = False
            self.solve_tricks = 0  # too big for the limit: the rule of thumb from now on
            return None
        self.solved += 1
        return value

    def _cost(self, c: Card, keep: Mask) -> int:
        cost = POINTS[c] * 16 + STRENGTH[c]
        if SUIT_OF[c] == self.trump:
            cost += 60
        if keep & BIT[c]:
            cost += 80
        return cost

    def _cheapest(self, cards: Mask, keep: Mask) -> Card:
        best = -1
        best_cost = 0
        for c in cards_of(cards):
            k = self._cost(c, keep)
            if best < 0 or k < best_cost:
                best, best_cost = c, k
        return best

    def _sure(self, trick: list[Card], seat: int) -> bool:
        """Whether the trick's winning card stays the winner whatever the opponents of
        ``seat`` after it in the trick play (its partner may still head it)."""
        n = self.n
        trump = self.trump
        pos = len(trick)
        win = trick[trick_winner(trick, trump)]
        me = self.side(seat)
        for later in range(pos, n):
            other = (self.leader + later) % n
            if self.side(other) == me:
                continue
            can = follow_mask(self.rules, self.hands[other], trick, trump, later)
            for x in cards_of(can):
                if SUIT_OF[x] == SUIT_OF[win]:
                    if STRENGTH[x] > STRENGTH[win]:
                        return False
                elif SUIT_OF[x] == trump:
                    return False
        return True

    def policy(self, seat: int) -> Card:  # noqa: C901 - the playout policy's rules of thumb, in priority order (the hot path)
        legal = self.moves()
        if legal & (legal - 1) == 0:
            return (legal & -legal).bit_length() - 1
        trump = self.trump
        hand = self.hands[seat]
        keep = 0
        if self.sings:
            for s in range(4):
                if hand & _PAIR[s] == _PAIR[s] and not self.sung >> s & 1:
                    keep |= _PAIR[s]
        trick = self.trick
        if not trick:
            best = -1
            for c in cards_of(legal & ~keep):
                better = best < 0 or POINTS[c] > POINTS[best]
                if POINTS[c] >= 10 and better and self._sure([c], seat):
                    best = c
            if best >= 0:
                return best
            return self._cheapest(legal, keep)
        n = self.n
        win_pos = trick_winner(trick, trump)
        at_stake = 0
        for c in trick:
            at_stake += POINTS[c]
        if n == 4 and self.side((self.leader + win_pos) % n) == self.side(seat):
            if self._sure(trick, seat):
                plain = legal & ~SUIT_MASK[trump] & ~keep
                best = -1
                for c in cards_of(plain if plain else legal & ~keep):
                    if best < 0 or POINTS[c] > POINTS[best]:
                        best = c
                if best >= 0:
                    return best
            return self._cheapest(legal, keep)
        win = trick[win_pos]
        sure = 0
        for c in cards_of(legal):
            s = SUIT_OF[c]
            beats = STRENGTH[c] > STRENGTH[win] if s == SUIT_OF[win] else s == trump
            if beats:
                trick.append(c)
                if self._sure(trick, seat):
                    sure |= BIT[c]
                trick.pop()
        if sure:
            c = self._cheapest(sure, keep)
            if at_stake + POINTS[c] >= 10 or SUIT_OF[c] != trump:
                return c
        return self._cheapest(legal, keep)


class Lookahead(Rollout):
    """A playout that searches before it plays: after the candidate card, the next ``plies``
    cards are chosen by alpha-beta (each side best for itself, on the known deal), and from
    each line's end :class:`Rollout`'s rule of thumb plays the hand out (its last
    ``solve_tricks`` tricks solved exactly, as a rollout's). No transposition table: a leaf's
    value depends on where the line stopped, not only on the cards left."""

    def __init__(
        self, state: State, max_side: int, plies: int, solve_tricks: int = 0, node_limit: int = 0
    ) -> None:
        super().__init__(state, max_side, solve_tricks=solve_tricks, node_limit=node_limit)
        self.plies = plies
        self.depth = 0
        """Cards chosen by the search so far on the current line."""
        self.in_tail = False
        """Inside an exact tail solve: :meth:`_search` is the solver's own."""

    def _tail(self) -> int | None:
        self.in_tail = True
        value = super()._tail()
        self.in_tail = False
        return value

    def _search(self, alpha: int, beta: int) -> int:
        if self.in_tail:
            return super()._search(alpha, beta)
        seat = (self.leader + len(self.trick)) % self.n
        if self.depth >= self.plies:
            return self.margin_after(self.policy(seat))
        maximizing = self.side(seat) == self.max_side
        cards = self._ordered(self.distinct(self.moves()), seat, -1)
        best = -100_000 if maximizing else 100_000
        self.depth += 1
        for c in cards:
            v = self._play(c, alpha, beta)
            if maximizing:
                if v > best:
                    best = v
                if best > alpha:
                    alpha = best
            else:
                if v < best:
                    best = v
                if best < beta:
                    beta = best
            if alpha >= beta:
                break
        self.depth -= 1
        return best


def rollout_values(
    state: State,
    max_side: int,
    cards: Sequence[Card],
    solve_tricks: int = 0,
    node_limit: int = 0,
    plies: int = 0,
) -> list[int]:
    """For each of ``cards`` (legal for the seat on turn of a play with no stock left), the
    margin for ``max_side`` from now when every seat then plays :class:`Rollout`'s rule
    (with ``solve_tricks``: until every hand holds that many cards, the rest solved exactly,
    each solve within ``node_limit`` cards tried; with ``plies``: the next ``plies`` cards
    searched first, :class:`Lookahead`)."""
    if plies:
        look = Lookahead(state, max_side, plies, solve_tricks, node_limit)
        return [look.value_of(c) for c in cards]
    r = Rollout(state, max_side, solve_tricks=solve_tricks, node_limit=node_limit)
    return [r.margin_after(c) for c in cards]
