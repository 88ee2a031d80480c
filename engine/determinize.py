"""Determinization: full deals consistent with what one seat has seen, for search.

A bot sees a :class:`~engine.view.View`, never the hidden hands. To search on the real
engine it samples the hidden part of the deal (the other seats' hands and, in 2p, the order
of the stock under its turned card) so that everything public still holds:

- every card the view shows (own hand, cards played, the trump card, the 2p turned card
  wherever it went, cards shown in cantes, tutes and exchanges) stays where it is seen, and
  the hidden cards are exactly the rest of the pack;
- every seat gets its hand size, the stock its size;
- the obligations of play (el arrastre, RULES.md §5) tell what a seat did not hold when it
  played (:func:`constraints`): a seat that did not follow the led suit holds none of it; one
  that followed without beating when it had to holds nothing stronger of that suit; one that
  did not trump when it had to holds no trump; one that trumped without overtrumping when it
  had to holds no stronger trump;
- a seat that sang a 20 while the 40 was unsung and ``forty_before_twenty`` barred that 20
  for a holder of the trump pair did not hold both trump 12 and 11.

In 2p a seat draws after every trick while the stock lasts, so what a play revealed holds
only until the seat's next draw: facts from tricks with the stock still on the table apply
to the current trick only.

:func:`sample` draws one deal by a randomised search with backtracking: every consistent
deal has a positive probability (the samples cover them all), though not all the same one.
:func:`to_state` turns the view and a sample into a :class:`~engine.state.State` that the
engine plays on exactly as on the real match.
"""

from __future__ import annotations

import random
from typing import Final, NamedTuple

from .actions import EXCHANGE
from .cards import (
    BIT,
    STRONGER,
    SUIT_MASK,
    SUIT_OF,
    Card,
    Mask,
    card_of,
    cards_of,
    trick_standing,
)
from .game import _exchange_card, pack_for
from .rules import CannotOvertrump, FortyBeforeTwenty, Rules, StockPhaseRules
from .state import State
from .view import View

_PAIR: Final = tuple(BIT[card_of(s, 12)] | BIT[card_of(s, 11)] for s in range(4))
_MAX_ATTEMPTS: Final = 64
_DFS_NODES: Final = 4_000
"""Places tried by one randomised backtracking search before the exact assignment takes over
(:func:`_assign_exact`): the search checks each place's count only, and on some views its
dead ends are many (found with IS-MCTS resampling a 4p deal for minutes)."""


class _TooDeep(Exception):
    """The backtracking search used up its places to try."""


class Knowledge(NamedTuple):
    """What a view tells of the hidden cards."""

    hidden: Mask
    """The cards nobody has shown to the viewer: the hidden part of the deal."""
    slots: tuple[int, ...]
    """Per seat, then the stock (last item): how many hidden cards each place gets."""
    known: tuple[Mask, ...]
    """Per seat: the cards it is seen to hold (the viewer's whole hand, others' shown cards)."""
    forbidden: tuple[Mask, ...]
    """Per seat, then the stock: hidden cards that cannot be there."""
    not_all: tuple[tuple[Mask, ...], ...]
    """Per seat: sets of cards it cannot hold all of (see :func:`_not_both`)."""
    turned: Card
    """2p: the turned card at the bottom of the stock (-1: no stock)."""


class Sample(NamedTuple):
    """One full deal: every seat's hand and, in 2p, the stock from the top."""

    hands: tuple[Mask, ...]
    stock: tuple[Card, ...]


def stock_before_trick(rules: Rules, trick_no: int) -> int:
    """2p: the cards in the stock when trick ``trick_no`` was played (0 in 3p and 4p)."""
    if rules.players != 2:
        return 0
    return max(0, 40 - 2 * rules.hand_size_2p - 2 * (trick_no - 1))


def _play_constraint(
    rules: Rules, trump: int, stock: bool, leader: int, prefix: tuple[Card, ...], card: Card
) -> Mask:
    """Cards the seat playing ``card`` to the trick ``prefix`` cannot have held then."""
    led = prefix[0]
    led_suit = SUIT_OF[led]
    suit = SUIT_OF[card]
    if stock and rules.stock_phase_rules is not StockPhaseRules.STRICT:
        if (
            rules.stock_phase_rules is StockPhaseRules.TRUMP_LEAD
            and led_suit == trump
            and suit != trump
        ):
            return SUIT_MASK[trump]
        return 0
    win, win_pos, best_led, trumped = trick_standing(prefix, trump)
    seat_pos = len(prefix)
    if rules.partner_relief and rules.players == 4 and (win_pos - seat_pos) % 4 == 2:
        # The partner is winning: only following suit is due.
        return SUIT_MASK[led_suit] if suit != led_suit else 0
    if suit == led_suit:
        if led_suit == trump or not trumped or rules.head_led_suit_when_trumped:
            ref = win if led_suit == trump else best_led
            if not BIT[card] & STRONGER[ref]:
                return STRONGER[ref]
        return 0
    out = SUIT_MASK[led_suit]
    if suit == trump:
        if trumped and not BIT[card] & STRONGER[win]:
            out |= STRONGER[win]
        return out
    if not trumped or rules.cannot_overtrump is CannotOvertrump.MUST_TRUMP:
        return out | SUIT_MASK[trump]
    return out | STRONGER[win]


def constraints(rules: Rules, v: View) -> tuple[Mask, ...]:
    """Per seat: the cards the obligations of play show it does not hold now."""
    n = v.players
    out = [0] * n
    trump = v.trump
    tricks: list[tuple[int, int, tuple[Card, ...]]] = [
        (v.trick_no - len(v.history) + i, leader, cards)
        for i, (leader, cards, _) in enumerate(v.history)
    ]
    if v.trick:
        tricks.append((v.trick_no, v.leader, tuple(c for _, c in v.trick)))
    for trick_no, leader, cards in tricks:
        stock = stock_before_trick(rules, trick_no) > 0
        if stock and trick_no != v.trick_no:
            continue  # the seats drew since: what they lacked then says nothing now
        for pos in range(1, len(cards)):
            seat = (leader + pos) % n
            out[seat] |= _play_constraint(rules, trump, stock, leader, cards[:pos], cards[pos])
    return tuple(out)


def _not_both(rules: Rules, v: View) -> tuple[tuple[Mask, ...], ...]:
    """Per seat: sets of cards it cannot hold all of now, from the 20s it sang.

    A 20 sung in the window of trick ``t`` while the 40 was unsung (and, under ``strict``,
    before any 20 of the seat) shows that the seat did not hold both trump 12 and 11 then;
    of that pair, the cards it played from trick ``t`` on were held then, so it cannot hold
    all of the others now. Only windows after which nobody drew tell anything.
    """
    n = v.players
    out: list[list[Mask]] = [[] for _ in range(n)]
    fbt = rules.forty_before_twenty
    if fbt is FortyBeforeTwenty.OFF:
        return tuple(tuple(x) for x in out)
    pair = _PAIR[v.trump]
    tricks = len(v.history) + 1
    # played_by[t][seat]: the cards seat played in tricks t and later (1: the hand's first).
    played_by = [[0] * n, *_played_from(v)]
    sang_twenty = [False] * n
    forty_sung = False
    for seat, suit, _, t in v.cantes:
        if suit == v.trump:
            forty_sung = True
            continue
        barred = not forty_sung and not (fbt is FortyBeforeTwenty.STRICT and sang_twenty[seat])
        sang_twenty[seat] = True
        if not barred or stock_before_trick(rules, t) > 0 or t > tricks:
            continue
        later = played_by[t][seat]
        played_all = played_by[1]
        others_played = 0
        for p in range(n):
            if p != seat:
                others_played |= played_all[p]
        if pair & (others_played | (played_all[seat] & ~later)):
            continue  # a card of the pair was elsewhere then
        need = pair & ~later
        if need:
            out[seat].append(need)
    return tuple(tuple(x) for x in out)


def _unsung(rules: Rules, v: View) -> tuple[tuple[Mask, ...], ...]:
    """Per seat: pairs it cannot hold now if every seat sings whenever it may (as every bot
    level does): an assumption on the other seats' play, not a rule, so only
    :func:`knowledge` with ``sings`` uses it.

    A window (RULES.md §6) that closed with no cante shows that its leader (the winner of
    the trick before) held no pair of a suit unsung then: of such a pair, the cards it played
    from that window's trick on were held then, so it cannot hold all of the others now. 3p
    and 4p only (in 2p the seats draw); the trump pair is left out for a seat that ``strict``
    bars from the 40; a window with a cante tells nothing (under ``one`` its side could sing
    no more), and neither does a partner's silence under ``cante_singers = side`` (a partner
    off turn is not asked).
    """
    n = v.players
    out: list[list[Mask]] = [[] for _ in range(n)]
    if n == 2 or not v.history:
        return tuple(tuple(x) for x in out)
    played_by = _played_from(v)  # [i][seat]: what seat played in the hand's tricks i + 1 on
    played = played_by[0]
    first = v.trick_no - len(v.history)
    for i in range(len(v.history)):
        window = first + i + 1  # the window after trick first + i, before trick ``window``
        if i + 1 == len(v.history) and not v.trick:
            continue  # still open: its leader may sing yet
        if any(c[3] == window for c in v.cantes):
            continue
        p = v.history[i][2]  # the winner of the trick before: its leader, who may sing
        if p == v.seat:
            continue
        later = played_by[i + 1][p]  # what p played from the window on: held then
        elsewhere = played[p] & ~later
        for q in range(n):
            if q != p:
                elsewhere |= played[q]
        for suit in _singable(rules, v, p, window):
            pair = _PAIR[suit]
            need = pair & ~later
            if not pair & elsewhere and need and need not in out[p]:
                out[p].append(need)
    return tuple(tuple(x) for x in out)


def _singable(rules: Rules, v: View, p: int, window: int) -> list[int]:
    """The suits whose pair ``p``, holding it, could have sung in ``window``: unsung before
    it, and not the trump pair when ``strict`` barred the 40 (a 20 of ``p`` before)."""
    sung = 0
    barred_40 = False
    for seat, suit, _, t in v.cantes:
        if t < window:
            sung |= 1 << suit
            if seat == p and suit != v.trump:
                barred_40 = rules.forty_before_twenty is FortyBeforeTwenty.STRICT
    if barred_40:
        sung |= 1 << v.trump
    return [s for s in range(4) if not sung >> s & 1]


def _played_from(v: View) -> list[list[Mask]]:
    """``[i][seat]``: the cards ``seat`` played in the hand's tricks ``i + 1`` and later (the
    current one included); one row more, of nothing, at the end."""
    n = v.players
    tricks = [(leader, cards) for leader, cards, _ in v.history]
    tricks.append((v.leader, tuple(c for _, c in v.trick)))
    out = [[0] * n for _ in range(len(tricks) + 1)]
    for i in range(len(tricks) - 1, -1, -1):
        row = list(out[i + 1])
        leader, cards = tricks[i]
        for pos in range(len(cards)):
            row[(leader + pos) % n] |= BIT[cards[pos]]
        out[i] = row
    return out


def knowledge(rules: Rules, v: View, sings: bool = False) -> Knowledge:
    """What ``v`` (a seat's view, not a spectator's) tells about the hidden cards; with
    ``sings``, also what the windows without a cante tell if every seat sings whenever it
    may (:func:`_unsung`)."""
    me = v.seat
    if me is None:
        raise ValueError("a spectator's view has no seat to determinize for")
    n = v.players
    seen = v.hand
    for p in v.public_cards:
        seen |= p
    for _, c in v.trick:
        seen |= BIT[c]
    for _, cards, _ in v.history:
        for c in cards:
            seen |= BIT[c]
    if v.turned_card >= 0:
        seen |= BIT[v.turned_card]
    pack = 0
    for c in pack_for(rules):
        pack |= BIT[c]
    hidden = pack & ~seen
    known = tuple(v.hand if p == me else v.public_cards[p] for p in range(n))
    slots = [v.hand_sizes[p] - known[p].bit_count() for p in range(n)]
    slots[me] = 0
    slots.append(v.stock_size - 1 if v.stock_size > 0 else 0)
    forbidden = (*constraints(rules, v), 0)
    not_all = _not_both(rules, v)
    if sings:
        extra = _unsung(rules, v)
        not_all = tuple(not_all[p] + extra[p] for p in range(n))
    return Knowledge(hidden, tuple(slots), known, forbidden, not_all, v.turned_card)


def sample(rules: Rules, v: View, rng: random.Random) -> Sample:
    """One full deal consistent with ``v``, drawn with ``rng``."""
    k = knowledge(rules, v)
    return sample_from(k, rng)


def sample_from(k: Knowledge, rng: random.Random, dfs_nodes: int = _DFS_NODES) -> Sample:
    """One full deal consistent with the knowledge ``k``. ``dfs_nodes``: places the quick
    search may try before the exact assignment takes over (0: the exact one at once)."""
    places = len(k.slots)
    n = places - 1
    for _ in range(_MAX_ATTEMPTS):
        got = _assign(k, rng, dfs_nodes=dfs_nodes)
        if got is None:
            break
        if _pairs_ok(k, got, n):
            return _finish(k, got, rng)
    # The pair constraint kept failing (or there is no deal at all): search without chance.
    got = _assign(k, rng, strict_pairs=True)
    if got is None:
        raise ValueError("no deal is consistent with this view")
    return _finish(k, got, rng)


def _pairs_ok(k: Knowledge, got: list[Mask], n: int) -> bool:
    for p in range(n):
        hand = got[p] | k.known[p]
        for need in k.not_all[p]:
            if hand & need == need:
                return False
    return True


def _finish(k: Knowledge, got: list[Mask], rng: random.Random) -> Sample:
    n = len(k.slots) - 1
    hands = tuple(got[p] | k.known[p] for p in range(n))
    stock: tuple[Card, ...] = ()
    if k.turned >= 0:
        top = list(cards_of(got[n]))
        rng.shuffle(top)
        stock = (*top, k.turned)
    return Sample(hands, stock)


def _assign(
    k: Knowledge, rng: random.Random, strict_pairs: bool = False, dfs_nodes: int = 0
) -> list[Mask] | None:
    """Hidden cards per place (seats, then the stock): a randomised backtracking search;
    ``dfs_nodes`` > 0: after that many places tried, :func:`_assign_exact` instead."""
    places = len(k.slots)
    cards = list(cards_of(k.hidden))
    rng.shuffle(cards)
    allowed: list[list[int]] = [
        [p for p in range(places) if k.slots[p] and not k.forbidden[p] & BIT[c]] for c in cards
    ]
    order = sorted(range(len(cards)), key=lambda i: len(allowed[i]))
    cards = [cards[i] for i in order]
    allowed = [allowed[i] for i in order]
    got = [0] * places
    cap = list(k.slots)
    # counts[i][p]: how many of cards[i:] may go to place p (for pruning).
    counts = [[0] * places for _ in range(len(cards) + 1)]
    for i in range(len(cards) - 1, -1, -1):
        row = list(counts[i + 1])
        for p in allowed[i]:
            row[p] += 1
        counts[i] = row
    left = [dfs_nodes if dfs_nodes > 0 else -1]
    try:
        if dfs_nodes != 0 or strict_pairs:
            if _dfs(0, cards, allowed, counts, cap, got, k, rng, strict_pairs, left):
                return got
            return None
    except _TooDeep:
        got = [0] * places
        cap = list(k.slots)
    return got if _assign_exact(places, cards, allowed, cap, got, rng) else None


def _pick(choices: list[int], cap: list[int], rng: random.Random) -> int:
    """Take one of ``choices`` (places), each as likely as the cards it still takes."""
    total = 0
    for p in choices:
        total += cap[p]
    r = rng.randrange(total)
    pick = 0
    for j in range(len(choices)):
        r -= cap[choices[j]]
        if r < 0:
            pick = j
            break
    return choices.pop(pick)


def _assign_exact(
    places: int,
    cards: list[Card],
    allowed: list[list[int]],
    cap: list[int],
    got: list[Mask],
    rng: random.Random,
) -> bool:
    """Put ``cards`` in order into ``got``, each in a place drawn as :func:`_dfs` draws it,
    among the places that leave the rest a way in (Hall's condition, exact: for every set of
    places, the cards left that may go only there are no more than the set still takes), so
    nothing is ever undone. False: no deal at all."""
    full = 1 << places
    masks = [sum(1 << p for p in a) for a in allowed]
    # only_in[i][s]: the cards of cards[i:] whose places all lie in the set s
    only_in = [[0] * full for _ in range(len(cards) + 1)]
    for i in range(len(cards) - 1, -1, -1):
        row = list(only_in[i + 1])
        m = masks[i]
        for s in range(full):
            if m & s == m:
                row[s] += 1
        only_in[i] = row
    if not _hall(only_in[0], cap, full):
        return False
    takes = [0] * full
    for i, card in enumerate(cards):
        choices = [p for p in allowed[i] if cap[p] > 0]
        while True:
            # never empty: the rest had a way in before this card
            p = _pick(choices, cap, rng)
            cap[p] -= 1
            if _hall(only_in[i + 1], cap, full, takes):
                got[p] |= BIT[card]
                break
            cap[p] += 1
    return True


def _hall(only_in: list[int], cap: list[int], full: int, takes: list[int] | None = None) -> bool:
    """Can the cards counted by ``only_in`` fill the places as ``cap`` says?"""
    t = takes if takes is not None else [0] * full
    for s in range(1, full):
        low = s & -s
        t[s] = t[s ^ low] + cap[low.bit_length() - 1]
        if only_in[s] > t[s]:
            return False
    return True


def _dfs(
    i: int,
    cards: list[Card],
    allowed: list[list[int]],
    counts: list[list[int]],
    cap: list[int],
    got: list[Mask],
    k: Knowledge,
    rng: random.Random,
    strict_pairs: bool,
    left: list[int],
) -> bool:
    if i == len(cards):
        return True
    card = cards[i]
    bit = BIT[card]
    choices = [p for p in allowed[i] if cap[p] > 0]
    while choices:
        left[0] -= 1
        if left[0] == 0:
            raise _TooDeep
        p = _pick(choices, cap, rng)
        if strict_pairs and p < len(k.not_all):
            hand = got[p] | k.known[p] | bit
            if any(hand & need == need for need in k.not_all[p]):
                continue
        cap[p] -= 1
        got[p] |= bit
        feasible = True
        nxt = counts[i + 1]
        for q in range(len(cap)):
            if cap[q] > nxt[q]:
                feasible = False
                break
        if feasible and _dfs(i + 1, cards, allowed, counts, cap, got, k, rng, strict_pairs, left):
            return True
        cap[p] += 1
        got[p] &= ~bit
    return False


def to_state(rules: Rules, v: View, s: Sample) -> State:
    """The full state of the match as ``v`` shows it, with the hidden part taken from ``s``.

    What the view does not carry is rebuilt from what it does: the sides' latest tricks from
    the history, the sung suits and the current window's cantes from the cantes, each seat's
    hand at the end of the previous trick as its hand plus its card in the current trick.
    The next hands' deals are not part of the view: the state's seed is 0.
    """
    n = v.players
    sides = rules.sides
    last_of = [0] * sides
    for i, (_, _, winner) in enumerate(v.history):
        last_of[winner % 2 if n == 4 else winner] = i + 1
    sung = 0
    sang_twenty = 0
    window = 0
    for seat, suit, points, trick_no in v.cantes:
        sung |= 1 << suit
        if points == 20:
            sang_twenty |= 1 << seat
        if trick_no == v.trick_no and not v.trick:
            window |= 1 << (seat % 2 if n == 4 else seat)
    public = 0
    for p in v.public_cards:
        public |= p
    held = list(s.hands)
    for seat, c in v.trick:
        held[seat] |= BIT[c]
    if v.seat is not None and v.held_at_win >= 0:
        held[v.seat] = v.held_at_win  # the viewer's own, without the card it drew since
    state = State(
        rules=rules,
        seed=0,
        decks=(),
        status=v.status,
        hand_no=v.hand_no,
        game_no=v.game_no,
        dealer=v.dealer,
        game_scores=v.game_scores,
        match_points=v.match_points,
        games_won=v.games_won,
        winners=v.winners,
        end_reason=v.end_reason,
        last_result=v.last_result,
        trump=v.trump,
        trump_card=v.trump_card,
        stock=s.stock,
        leader=v.leader,
        trick_no=v.trick_no,
        history=v.history,
        won_points=v.won_points,
        tricks_won=v.tricks_won,
        last_trick_of=tuple(last_of),
        cantes=v.cantes,
        sung_suits=sung,
        sang_twenty=sang_twenty,
        held_at_win=tuple(held),
        hands=s.hands,
        trick=tuple(c for _, c in v.trick),
        turn=v.turn,
        public=public,
        window_used=window,
        exchanged=False,
        turn_id=v.turn_id,
    )
    if (
        n == 2
        and v.seat == v.leader
        and not v.trick
        and s.stock
        and EXCHANGE not in v.legal
        and _exchange_card(state, v.leader) >= 0
    ):
        state = state._replace(exchanged=True)
    return state


def determinize(rules: Rules, v: View, rng: random.Random) -> State:
    """A full state consistent with ``v``: :func:`sample` then :func:`to_state`."""
    return to_state(rules, v, sample(rules, v, rng))
