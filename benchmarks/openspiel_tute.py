"""OpenSpiel's IS-MCTS playing Tute: a thin pyspiel Python game over our engine.

The game is one hand of Tute from a position: its states wrap an :class:`engine.State`, its
actions are the engine's action numbers, a player's information state is what its seat's
:class:`engine.View` shows, and it ends when the hand does, each player getting its side's
:func:`engine.bots.utility` of the hand (scaled to about -1..1). ``resample_from_infostate``
draws from :mod:`engine.determinize`, so IS-MCTS samples the same worlds our bots do.

:func:`ismcts_bot` is a tournament level: ``open_spiel.python.algorithms.ismcts.ISMCTSBot``
with random rollouts, given a time per move (it runs as many simulations as fit, by a
running estimate of their cost).
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import pyspiel  # type: ignore[import-not-found]
from open_spiel.python.algorithms import ismcts, mcts  # type: ignore[import-not-found]

from engine import Rules, State, View, apply, legal_actions, view
from engine.bots import Bot, utility
from engine.determinize import determinize
from engine.state import PLAYING

NUM_ACTIONS = 49
SCALE = 150.0

_GAME_TYPE = pyspiel.GameType(
    short_name="python_tute_hand",
    long_name="Python Tute (one hand from a position)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=False,
    provides_observation_tensor=False,
    parameter_specification={"players": 4},
)


class TuteHandGame(pyspiel.Game):  # type: ignore[misc]
    """One hand of Tute for ``players`` players (states are made from positions)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        params = params or {"players": 4}
        n = int(params["players"])
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=0,
            num_players=n,
            min_utility=-2.0,
            max_utility=2.0,
            utility_sum=None,
            max_game_length=200,
        )
        super().__init__(_GAME_TYPE, info, params)

    def new_initial_state(self) -> TuteHandState:
        raise NotImplementedError("states come from positions: TuteHandState(game, rules, s)")


class TuteHandState(pyspiel.State):  # type: ignore[misc]
    def __init__(self, game: TuteHandGame, rules: Rules, state: State, rng: random.Random) -> None:
        super().__init__(game)
        self.rng = rng
        """Draws the resampled worlds (pyspiel's own sampler is re-made, so re-seeded, at
        every call)."""
        self.rules = rules
        self.s = state
        self.hand_no = state.hand_no

    def current_player(self) -> int:
        if self.is_terminal():
            return int(pyspiel.PlayerId.TERMINAL)
        return int(self.s.turn)

    def _legal_actions(self, player: int) -> list[int]:
        return list(legal_actions(self.s, player))

    def _apply_action(self, action: int) -> None:
        self.s, _ = apply(self.s, self.s.turn, int(action))

    def is_terminal(self) -> bool:
        return self.s.status != PLAYING or self.s.hand_no != self.hand_no

    def returns(self) -> list[float]:
        n = self.rules.players
        if not self.is_terminal() or self.s.last_result is None:
            return [0.0] * n
        r = self.s.last_result
        return [utility(self.rules, r, p % 2 if n == 4 else p) / SCALE for p in range(n)]

    def information_state_string(self, player: int | None = None) -> str:
        if player is None:
            player = self.current_player()
        return info_key(view(self.s, player))

    def resample_from_infostate(self, player: int, sampler: Any) -> TuteHandState:
        state = determinize(self.rules, view(self.s, player), self.rng)
        return TuteHandState(self.get_game(), self.rules, state, self.rng)

    def clone(self) -> TuteHandState:
        twin = TuteHandState(self.get_game(), self.rules, self.s, self.rng)
        twin.hand_no = self.hand_no
        return twin

    def __str__(self) -> str:
        return f"tute hand {self.hand_no} trick {self.s.trick_no} turn {self.s.turn}"


def info_key(v: View) -> str:
    """What a seat knows, as a string: equal for every world its view allows."""
    return repr(
        (
            v.seat,
            v.hand,
            v.trick,
            v.history,
            v.cantes,
            v.public_cards,
            v.hand_sizes,
            v.turned_card,
            v.stock_size,
            v.turn,
            v.trick_no,
            v.legal,
        )
    )


class IsmctsLevel:
    """A tournament bot: IS-MCTS with ``time_s`` per move."""

    def __init__(self, time_s: float, uct_c: float = 2.0) -> None:
        self.time_s = time_s
        self.uct_c = uct_c
        self.per_sim = 0.002
        self.games: dict[int, TuteHandGame] = {}

    def __call__(self, rules: Rules, v: View, rng: random.Random) -> int:
        if len(v.legal) == 1:
            return v.legal[0]
        n = rules.players
        game = self.games.get(n)
        if game is None:
            game = self.games[n] = TuteHandGame({"players": n})
        np_rng = np.random.RandomState(rng.getrandbits(31))
        root = TuteHandState(game, rules, determinize(rules, v, rng), rng)
        sims = max(8, int(self.time_s / self.per_sim))
        bot = ismcts.ISMCTSBot(
            game,
            mcts.RandomRolloutEvaluator(1, np_rng),
            self.uct_c,
            sims,
            random_state=np_rng,
            final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT,
            allow_inconsistent_action_sets=True,
        )
        start = time.process_time()
        action = int(bot.step(root))
        took = time.process_time() - start
        self.per_sim = 0.7 * self.per_sim + 0.3 * (took / sims)
        return action if action in v.legal else v.legal[0]


def ismcts_bot(time_s: float) -> Bot:
    return IsmctsLevel(time_s)
