"""Bots: legal moves only, the same move for the same view and seed, and an exact solver.

The solver is checked against a brute force over the real engine: every action (cards and
cantes) tried at every node, the final margin read from the engine's own hand result.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import PRESETS, Rules, State, apply, legal_actions, new_match, view
from engine.bots import (
    BOTS,
    HARD,
    HARD_3P,
    HARD_4P,
    MEDIUM,
    RATINGS,
    RATINGS_CI95,
    BestOther,
    Bot,
    MatchValue,
    SearchBot,
    declaration,
    easy_bot,
    level_for,
    race,
)
from engine.determinize import determinize
from engine.game import _follow_cards
from engine.search import Rollout, Solver, follow_mask, rollout_values, solve
from engine.state import PLAYING

from .builds import COMPILED, examples
from .positions import legal, position, texts

BOTS_HARD = BOTS["hard"]
assert isinstance(BOTS_HARD, SearchBot)

FAST: dict[str, Bot] = {
    "random": BOTS["random"],
    "easy": BOTS["easy"],
    "medium": SearchBot(MEDIUM._replace(samples=3, time_s=600.0)),
    "hard": BOTS_HARD.remade(
        lambda b: b._replace(samples=3, solve_tricks=2, node_limit=3000, time_s=600.0)
    ),
    "tree": SearchBot(HARD._replace(tree=1, iterations=30, time_s=600.0)),
}
"""The levels with small budgets: the same code paths, quicker. Their samples, not the time
bound, end the search (so that a busy machine changes no move)."""


def play_match(rules: Rules, levels: list[str], seed: int, max_moves: int = 400) -> State:
    rng = random.Random(seed)
    s = new_match(rules, rng)
    for _ in range(max_moves):
        if s.over:
            break
        seat = s.turn
        v = view(s, seat)
        a = FAST[levels[seat % len(levels)]](rules, v, rng)
        assert a in v.legal, (levels[seat % len(levels)], a, v.legal)
        s, _ = apply(s, seat, a)
    return s


@pytest.mark.parametrize(
    "seeds", [1, pytest.param(4, marks=pytest.mark.slow)], ids=["short", "long"]
)
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_level_plays_only_legal_actions(preset: str, seeds: int) -> None:
    """Every level in every seat (two seatings a deal), over ``seeds`` deals a preset (twice
    as many on the compiled engine, :mod:`.builds`)."""
    rules = PRESETS[preset]
    for seed in range(seeds * (2 if COMPILED else 1)):
        play_match(
            rules,
            ["random", "easy", "medium", "hard"][: rules.players] or ["hard"],
            seed,
            max_moves=120,
        )
        play_match(rules, ["hard", "medium", "easy", "random"], seed + 10, max_moves=120)
        play_match(rules, ["tree", "easy", "tree", "easy"], seed + 20, max_moves=120)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32),
    steps=st.integers(0, 60),
    preset=st.sampled_from(sorted(PRESETS)),
    level=st.sampled_from(sorted(FAST)),
)
def test_the_same_view_and_seed_give_the_same_move(
    seed: int, steps: int, preset: str, level: str
) -> None:
    rules = PRESETS[preset]
    rng = random.Random(seed)
    s = new_match(rules, rng)
    for _ in range(steps):
        if s.over:
            return
        acts = legal_actions(s, s.turn)
        s, _ = apply(s, s.turn, rng.choice(acts))
    if s.over:
        return
    v = view(s, s.turn)
    bot = FAST[level]
    moves = {bot(rules, v, random.Random(seed)) for _ in range(3)}
    assert len(moves) == 1
    assert moves <= set(v.legal)


@pytest.mark.parametrize("preset", ["parejas", "tres", "corriente-8"])
def test_a_level_searches_with_the_budget_of_its_tables_players(preset: str) -> None:
    """``hard`` has budgets of its own at 3p and 4p tables; a level remade (scaled, or
    changed by a benchmark) changes every one of its budgets; and a move is the one the
    budget of the table's number of players makes."""
    hard = BOTS_HARD
    assert isinstance(hard, SearchBot)  # for the type checker: a module name is not narrowed
    assert hard.budget_for(4) == HARD_4P != HARD
    assert hard.budget_for(3) == HARD_3P != HARD
    assert hard.budget_for(2) == HARD
    half = hard.remade(lambda b: b._replace(samples=b.samples // 2))
    assert half.budget_for(4) == HARD_4P._replace(samples=60)
    assert half.budget_for(3) == HARD_3P._replace(samples=200)
    assert half.budget_for(2) == HARD._replace(samples=60)
    assert half.clock is hard.clock
    tiny = MEDIUM._replace(samples=2, time_s=600.0)
    other = MEDIUM._replace(samples=2, time_s=600.0, lookahead=2)
    rules = PRESETS[preset]
    split = SearchBot(tiny, by_players={rules.players: other})
    alone, default = SearchBot(other), SearchBot(tiny)
    differ = 0
    for seed in range(40):
        rng = random.Random(seed)
        s = new_match(rules, rng)
        while not s.over and (s.stock or max(h.bit_count() for h in s.hands) > 6):
            s, _ = apply(s, s.turn, rng.choice(legal_actions(s, s.turn)))  # to no stock
        if s.over:
            continue
        v = view(s, s.turn)
        move = split(rules, v, random.Random(seed))
        assert move == alone(rules, v, random.Random(seed))
        differ += move != default(rules, v, random.Random(seed))
    assert differ > 0  # the budgets choose differently: the check above can fail


def _margin_now(state: State, side: int) -> int:
    n = state.rules.players
    pts = list(state.won_points)
    for seat, _, p, _ in state.cantes:
        pts[seat % 2 if n == 4 else seat] += p
    return pts[side] - sum(pts[s] for s in range(len(pts)) if s != side)


def brute(state: State, side: int) -> int:
    """The final margin for ``side`` under best play, over every card and cante."""
    n = state.rules.players
    if state.status != PLAYING or state.trick_no == 0 or state.hand_no != HAND_NO[0]:
        r = state.last_result
        assert r is not None
        return r.totals[side] - sum(r.totals[s] for s in range(len(r.totals)) if s != side)
    seat = state.turn
    acts = [a for a in legal_actions(state, seat) if a < 44]
    mover = seat % 2 if n == 4 else seat
    vals = [brute(apply(state, seat, a)[0], side) for a in acts]
    return max(vals) if mover == side else min(vals)


HAND_NO = [0]


def endgame(rules: Rules, seed: int, cards_left: int) -> State | None:
    rng = random.Random(seed)
    s = new_match(rules, rng)
    while not s.over:
        if not s.stock and sum(h.bit_count() for h in s.hands) <= cards_left:
            return s
        acts = legal_actions(s, s.turn)
        decl = [a for a in acts if 40 <= a < 44]
        s, _ = apply(s, s.turn, decl[0] if decl else rng.choice([a for a in acts if a < 40]))
    return None


def solved_endgames(
    rules: Rules, left: int, seeds: int
) -> Iterator[tuple[int, State, int, dict[int, int]]]:
    """The endgames of ``left`` cards of seeds ``0..seeds-1``: the seed, the state, the side
    of the seat on turn, and the solver's final margin of each of its cards for that side."""
    for seed in range(seeds):
        s = endgame(rules, seed, left)
        if s is None:
            continue
        HAND_NO[0] = s.hand_no
        side = s.turn % 2 if rules.players == 4 else s.turn
        values = solve(s, side)
        assert values is not None
        base = _margin_now(s, side)
        yield seed, s, side, {c: base + m for c, m in values.items()}


@pytest.mark.parametrize(
    ("preset", "left"),
    [
        ("parejas", 9),
        ("tres", 8),
        ("corriente-8", 8),
        ("parejas-mejor-de-3", 9),
        ("corriente-6", 7),
    ],
)
def test_the_solver_agrees_with_brute_force_on_small_endgames(preset: str, left: int) -> None:
    rules = PRESETS[preset]
    checked = 0
    for seed, s, side, final in solved_endgames(rules, left, 12):
        seat = s.turn
        cards = [a for a in legal_actions(s, seat) if a < 40]
        assert sorted(final) == cards
        for c in cards:
            assert final[c] == brute(apply(s, seat, c)[0], side), (preset, seed, c)
        checked += 1
    assert checked >= 6


def test_the_tree_search_wins_a_known_endgame_that_can_be_won() -> None:
    """2p once the stock is gone: everything is known, so the tree search is a plain Monte
    Carlo tree search of the position. Where one card wins the hand and another loses it
    (by the exact solver), it plays a winning one."""
    rules = PRESETS["corriente-8"]
    bot = SearchBot(HARD._replace(tree=1, iterations=1500, time_s=600.0))
    checked = 0
    for left in (6, 8, 10):
        for seed, s, _, final in solved_endgames(rules, left, 40):
            if max(final.values()) <= 0 or min(final.values()) >= 0:
                continue  # no card changes who wins
            a = bot(rules, view(s, s.turn), random.Random(seed))
            if a >= 40:
                continue  # a declaration first
            assert final[a] > 0, (left, seed, final, a)
            checked += 1
    assert checked >= 5


def test_the_tree_search_counts_its_iterations_at_the_root() -> None:
    """Every iteration chooses one of the seat's cards at the root: the visits add up to the
    iterations, and the card played is the one visited most."""
    rules = PRESETS["parejas"]
    s = new_match(rules, random.Random(3))
    v = view(s, s.turn)
    cards = [a for a in v.legal if a < 40]
    bot = SearchBot(HARD._replace(tree=1, iterations=200, time_s=600.0))
    visits = bot.tree_visits(rules, v, random.Random(1), cards)
    assert sum(visits) == 200
    assert all(x >= 1 for x in visits)  # every card tried before any is tried twice
    played = bot(rules, v, random.Random(1))
    assert visits[cards.index(played)] == max(visits)


def extremes(state: State, side: int) -> tuple[int, int]:
    """The lowest and the highest final margin for ``side`` over every line of play."""
    if state.status != PLAYING or state.trick_no == 0 or state.hand_no != HAND_NO[0]:
        m = brute(state, side)
        return m, m
    seat = state.turn
    got = [extremes(apply(state, seat, a)[0], side) for a in legal_actions(state, seat) if a < 44]
    return min(lo for lo, _ in got), max(hi for _, hi in got)


@pytest.mark.parametrize(("preset", "left"), [("parejas", 8), ("tres", 6), ("corriente-8", 6)])
def test_the_solvers_bound_holds_on_every_line(preset: str, left: int) -> None:
    """At a trick's start the solver cuts on a bound of how far the margin can still move
    (card points in play, las diez de últimas, the cantes some hand can still sing): no line
    of play, best or worst, goes past it."""
    rules = PRESETS[preset]
    checked = 0
    for seed in range(12):
        s = endgame(rules, seed, left)
        if s is None:
            continue
        assert not s.trick
        HAND_NO[0] = s.hand_no
        side = s.turn % 2 if rules.players == 4 else s.turn
        bound = Solver(s, side)._bound()
        lo, hi = extremes(s, side)
        now = _margin_now(s, side)
        assert -bound <= lo - now and hi - now <= bound, (preset, seed, lo, hi, now, bound)
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize(("preset", "left"), [("parejas", 16), ("tres", 12), ("corriente-8", 12)])
def test_the_solver_gives_the_same_values_from_a_filled_table(preset: str, left: int) -> None:
    """A second solve of the same position reads the table the first one filled (its values
    and its best cards, tried first): the values do not change."""
    rules = PRESETS[preset]
    checked = 0
    for seed in range(8):
        s = endgame(rules, seed, left)
        if s is None:
            continue
        side = s.turn % 2 if rules.players == 4 else s.turn
        solver = Solver(s, side)
        first = solver.root_values()
        assert solver.tt
        assert solver.root_values() == first == solve(s, side)
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize(
    ("preset", "left"), [("parejas", 24), ("tres", 21), ("corriente-8", 12), ("corriente-6", 10)]
)
def test_a_rollout_plays_legal_cards_and_scores_as_the_engine(preset: str, left: int) -> None:
    """The rollout's line, replayed on the engine (the trick's winner singing what the rollout
    sang), is legal and ends with the margin the rollout computed."""
    rules = PRESETS[preset]
    checked = 0
    for seed in range(10):
        s = endgame(rules, seed, left)
        if s is None:
            continue
        HAND_NO[0] = s.hand_no
        seat = s.turn
        side = seat % 2 if rules.players == 4 else seat
        cards = [a for a in legal_actions(s, seat) if a < 40]
        r = Rollout(s, side, record=True)
        margin = r.margin_after(cards[-1])
        line = [cards[-1], *r.line]
        for card in line:
            while s.status == PLAYING and s.hand_no == HAND_NO[0]:
                d = declaration(view(s, s.turn))
                if not 40 <= d < 44:
                    break
                s, _ = apply(s, s.turn, d)
            assert card in legal_actions(s, s.turn), (preset, seed, card)
            s, _ = apply(s, s.turn, card)
        assert s.hand_no != HAND_NO[0] or s.status != PLAYING
        start = endgame(rules, seed, left)
        assert start is not None
        assert _margin_now(start, side) + margin == brute(s, side)
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize(("preset", "left"), [("parejas", 13), ("tres", 10), ("corriente-8", 9)])
def test_a_rollout_solves_its_tail_exactly(preset: str, left: int) -> None:
    """The seat on turn plays the trick's last card: a rollout that solves from the next trick
    on gives each card the solver's value; past its node limit it is the plain rollout."""
    rules = PRESETS[preset]
    checked = 0
    for seed in range(12):
        s = endgame(rules, seed, left)
        if s is None:
            continue
        assert len(s.trick) == rules.players - 1
        side = s.turn % 2 if rules.players == 4 else s.turn
        cards = [a for a in legal_actions(s, s.turn) if a < 40]
        values = solve(s, side)
        assert values is not None
        assert rollout_values(s, side, cards, solve_tricks=10) == [values[c] for c in cards]
        assert rollout_values(s, side, cards, solve_tricks=10, node_limit=1) == (
            rollout_values(s, side, cards)
        )
        checked += 1
    assert checked >= 6


def _looked_ahead(s: State, side: int, plies: int, start: int, tail: int = 0) -> int:
    """The margin for ``side`` from ``start`` (the margin when the search began): every line of
    ``plies`` cards on the engine (each seat's side best for itself, the trick's winner singing
    at once), then :class:`Rollout`'s rule of thumb to the end of the hand (its last ``tail``
    tricks solved). A seat chooses among the cards :meth:`Solver.distinct` keeps, as the
    search does."""
    while s.status == PLAYING and s.hand_no == HAND_NO[0]:
        d = declaration(view(s, s.turn))
        if not 40 <= d < 44:
            break
        s, _ = apply(s, s.turn, d)
    if s.status != PLAYING or s.trick_no == 0 or s.hand_no != HAND_NO[0]:
        return brute(s, side) - start
    if plies == 0:
        r = Rollout(s, side, solve_tricks=tail)
        return _margin_now(s, side) - start + r.margin_after(r.policy(s.turn))
    here = Solver(s, side)
    kept = here.distinct(here.moves())
    cards = [a for a in legal_actions(s, s.turn) if a < 40 and kept >> a & 1]
    vals = [_looked_ahead(apply(s, s.turn, c)[0], side, plies - 1, start, tail) for c in cards]
    n = s.rules.players
    return max(vals) if (s.turn % 2 if n == 4 else s.turn) == side else min(vals)


@pytest.mark.parametrize(("preset", "left"), [("parejas", 16), ("tres", 12), ("corriente-8", 10)])
def test_a_lookahead_is_minimax_over_its_plies_then_the_rollout(preset: str, left: int) -> None:
    """Each card's value is the plain minimax over the next ``plies`` cards replayed on the
    engine with the rollout's margin at every leaf (with its tail solved, when asked); plies
    to the end of the hand are the exact solve."""
    rules = PRESETS[preset]
    checked = 0
    for seed, s, side, values in solved_endgames(rules, left, 10):
        cards = [a for a in legal_actions(s, s.turn) if a < 40]
        base = _margin_now(s, side)
        assert [base + m for m in rollout_values(s, side, cards, plies=40)] == [
            values[c] for c in cards
        ]
        for plies in (1, 2, 3, rules.players + 1):
            got = rollout_values(s, side, cards, plies=plies)
            want = [_looked_ahead(apply(s, s.turn, c)[0], side, plies, base) for c in cards]
            assert got == want, (seed, plies)
        got = rollout_values(s, side, cards, solve_tricks=2, plies=2)
        want = [_looked_ahead(apply(s, s.turn, c)[0], side, 2, base, tail=2) for c in cards]
        assert got == want, seed
        checked += 1
    assert checked >= 6


@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32), steps=st.integers(1, 80), preset=st.sampled_from(sorted(PRESETS))
)
def test_the_solvers_obligations_are_the_engines(seed: int, steps: int, preset: str) -> None:
    rules = PRESETS[preset]
    rng = random.Random(seed)
    s = new_match(rules, rng)
    for _ in range(steps):
        if s.over:
            return
        s, _ = apply(s, s.turn, rng.choice([a for a in legal_actions(s, s.turn) if a < 40]))
        if s.trick and not s.stock:
            seat = s.turn
            assert (
                follow_mask(rules, s.hands[seat], s.trick, s.trump, len(s.trick))
                == (_follow_cards(s, seat)[0])
            )


def test_bots_read_only_the_view() -> None:
    """A bot's move depends on the view alone: two deals that look the same to the seat
    (a determinized twin of the real one) get the same move with the same seed."""
    rules = PRESETS["parejas"]
    rng = random.Random(3)
    s = new_match(rules, rng)
    for _ in range(9):
        s, _ = apply(s, s.turn, rng.choice([a for a in legal_actions(s, s.turn) if a < 40]))
    seat = s.turn
    twin = determinize(rules, view(s, seat), random.Random(1))
    assert view(twin, seat).hand == view(s, seat).hand
    for name, bot in FAST.items():
        assert bot(rules, view(s, seat), random.Random(7)) == bot(
            rules, view(twin, seat)._replace(turn_id=view(s, seat).turn_id), random.Random(7)
        ), name


def test_easy_throws_points_on_a_partner_winning_last() -> None:
    rules = Rules(players=4)
    s = position(
        rules,
        trump="B",
        leader=1,
        trick="4C 1C 5C",
        hands={0: "3O 2O 6E", 1: "4B", 2: "5B", 3: "7B"},
    )
    # Seat 0 plays last; its partner (seat 2) wins with the ace: it throws its 3.
    assert texts([easy_bot(rules, view(s, 0), random.Random(0))]) == {"3O"}


def test_easy_does_not_overtrump_a_partner_when_it_may_choose() -> None:
    rules = Rules(players=4, partner_relief=True)
    s = position(
        rules, trump="E", leader=2, trick="1C 4C", hands={0: "3E 5O", 1: "4B 6B", 2: "5B", 3: "7B"}
    )
    assert set(legal(s)) == {"3E", "5O"}
    assert texts([easy_bot(rules, view(s, 0), random.Random(0))]) == {"5O"}


def test_easy_wins_a_trick_with_points_cheaply() -> None:
    rules = Rules(players=4)
    s = position(
        rules,
        trump="E",
        leader=1,
        trick="12C 4C 5C",
        hands={0: "1C 3C 11C 2O", 1: "4B", 2: "5B", 3: "7B"},
    )
    # Last to play, it must head the rey: with the 3 rather than the ace.
    assert set(legal(s)) == {"1C", "3C"}
    assert texts([easy_bot(rules, view(s, 0), random.Random(0))]) == {"3C"}


def test_the_ratings_rank_every_level_in_order() -> None:
    assert list(RATINGS) == list(BOTS) == list(RATINGS_CI95)
    assert RATINGS["random"] == 0.0
    values = [RATINGS[level] for level in BOTS]
    assert values == sorted(values) and len(set(values)) == len(values)
    for level, (lo, hi) in RATINGS_CI95.items():
        assert lo <= RATINGS[level] <= hi
    for level in BOTS:
        assert level_for(RATINGS[level]) == level
        assert level_for(RATINGS[level] + 1) == level
    assert level_for(-1000) == "random"
    assert level_for(10_000) == "hard"


def test_race_is_the_chance_of_reaching_the_target_first() -> None:
    assert race(3, 0, 0) == 0.5
    assert race(3, 2, 0) == 0.875  # one of the next three units is enough
    assert race(3, 0, 2) == 0.125
    assert race(5, 1, 3) == 0.1875  # four units before two: at most one lost in five
    assert race(3, 3, 1) == 1.0 and race(3, 1, 3) == 0.0


def test_match_value_counts_the_match_not_the_points() -> None:
    """Under points scoring a hand that takes a side past the target wins the match; one that
    leaves the game open is worth less than that whatever its margin; a larger margin is
    never worth less (so the solver's margins keep their order)."""
    s = new_match(PRESETS["parejas"], 7)
    value = MatchValue(s, 0)
    values = [value.of_margin(m) for m in range(-150, 151)]
    assert values == sorted(values)
    assert value.of_margin(80) >= 100.0  # 105 to 25: the game (and the match) is won
    assert value.of_margin(-80) <= -100.0
    assert abs(value.of_margin(10)) < 50.0  # 70 to 60: nobody has 101, another hand
    # Carried scores: 90 to 0 before the hand, a hand lost 60 to 70 still wins the game.
    carried = MatchValue(s._replace(game_scores=(90, 0)), 0)
    assert carried.of_margin(-10) > 95.0  # the match, less a tenth of the margin
    # Hands scoring (2p corriente-8, race to 3): at 2 to 0 the hand won wins the match.
    c8 = new_match(PRESETS["corriente-8"], 7)
    ahead = MatchValue(c8._replace(match_points=(2, 0)), 0)
    assert ahead.of_margin(10) == pytest.approx(100.0 + 1.0)  # 70 to 60: a tenth of 10
    assert ahead.of_margin(-10) == pytest.approx(100.0 * (2 * race(3, 2, 1) - 1) - 1.0)


def test_best_other_scores_a_3p_hand_by_the_better_other_seat() -> None:
    """3p: 60 points against 35 and 35 wins the hand though both others together have more;
    the value never falls as the margin grows (so the solver's order holds)."""
    s = new_match(PRESETS["tres"], 3)
    value = BestOther(s, 0)
    assert value.of_margin(60 - 70) > 30.0  # won by 25: the hands system's bonus of 30 on top
    assert value.of_margin(40 - 90) < -30.0  # 40 against 45 and 45
    values = [value.of_margin(m) for m in range(-130, 131)]
    assert values == sorted(values)
    # Points already won count where they are: 30 for seat 1, none for seat 2, so of the 70
    # the others end with, seat 1 is taken to hold 50 (30 and half the 40 still to come).
    won = BestOther(s._replace(won_points=(0, 30, 0)), 0)
    assert won.of_margin(60 - 70) == pytest.approx(60 - 50 + 30.0)
