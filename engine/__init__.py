"""tute's rules engine: Tute exactly as ``RULES.md`` says, pure and fast.

``RULES.md`` is the team's rulebook, beside the repository (``../shared/RULES.md``), with the
reasons for every decision (its §14). ``docs/rules.md`` is its edition for frontend
developers, with the same section numbers §1-§13, so the § cited in the engine's docstrings
can be read in either.

Vocabulary (the game's own words, used throughout):

- *oros, copas, espadas, bastos* (``O C E B``): the suits; *sota* 10, *caballo* 11, *rey* 12.
- *mano*: the player at the dealer's right, who leads the first trick; play moves to the
  right, ``next(s) = (s + 1) % players``.
- *baza*: a trick. *Arrastre*: the duty to follow suit, beat, trump and overtrump (§5).
- *triunfo*: trumps. *Cante*: showing the rey and caballo of a suit (las veinte, las cuarenta).
- *Tute*: the four reyes or four caballos in one hand. *Las diez de últimas*: 10 points for
  the last trick. *Capote*: one side takes every trick.

The API is small and total::

    state = new_match(Rules.preset("parejas"), rng)        # deals the first hand
    legal_actions(state, seat) -> tuple[int, ...]          # sorted action numbers
    state, events = apply(state, seat, action)             # or IllegalAction, state untouched
    view(state, seat_or_None) -> View                      # all that leaves the engine

``apply`` is ``check(state, seat, action)`` (raises, or returns ``None``; ``is_legal`` says it
as a bool) then ``apply_trusted(state, seat, action)``, which checks nothing: for an action
taken from ``legal_actions`` of that very state (searches, bots, simulations).

``apply`` takes the acting seat explicitly, because in a 4p window with
``cante_singers = side`` the leader's partner may sing although it is not on turn.

Every event carries its own context (the trick it belongs to; after a hand, the
:class:`Standing` and the match points awarded), so a reader of one event needs no state.
The game's facts are spelled here once, for every caller: :data:`NUM_CARDS` and the action
numbers (:data:`SING`, :data:`TUTE_12`, ..., :func:`kind_of`), sides (:func:`side_of`,
:data:`SIDE_SEATS`), :class:`Status`, :data:`LAST_TRICK_POINTS` and the match points of a hand
(:func:`match_points_awarded`).

Decisions where RULES.md is silent:

- A *timeout* forfeits the declarations of the current window only and plays the cheapest
  legal card (§11); a *forfeit* may be applied for any seat while the match is playing.
- In the points system, when tied sides both won no trick in the deciding hand, the lower
  side number wins the tie under ``tie_rule = last_trick`` (it cannot happen in 2p or 4p).
- The exchange is one action, ``exchange``: the 7 (for a turned 1, 3, 12, 11 or 10) or the
  2 (for a turned 4-7) never both apply to one turned card.
- Hand ``h`` of a match is dealt from ``decks[h-1]`` when given, otherwise from a pack
  shuffled by a Fisher-Yates shuffle driven by BLAKE2b(``tute/<seed>/<h>``) (every order
  equally likely to within 2**-34; see ``engine.game.deck_for_hand``), and a random first
  dealer is BLAKE2b(``tute/<seed>/dealer``) modulo the players: a match replays from its
  rules, seed, decks and actions, and without the seed one hand's pack tells nothing of
  another's.
- A declaration by a seat that may not make it now (an opponent of the trick winner, a
  follower, a seat outside the window) is refused with the declaration's own reason
  (``cante_not_allowed``, ``tute_not_allowed``, ``exchange_not_allowed``), never
  ``not_your_turn``: with ``cante_singers = side`` a seat off turn may sing, so the turn alone
  does not decide. Cards and ``timeout`` off turn are ``not_your_turn``.
"""

from .actions import (
    EXCHANGE,
    FORFEIT,
    NUM_PLAYER_ACTIONS,
    SING,
    TIMEOUT,
    TUTE_11,
    TUTE_12,
    Action,
    ActionKind,
    action_text,
    is_card,
    is_sing,
    kind_of,
    parse_action,
)
from .cards import (
    NUM_CARDS,
    Card,
    Mask,
    card_text,
    cards_of,
    mask_of,
    mask_text,
    parse_card,
    parse_cards,
)
from .codec import decode_state, encode_state
from .errors import IllegalAction, InvalidInput, InvalidOption, TuteError
from .events import Event, HandResult, Standing, redact, visible_cards
from .game import (
    apply,
    apply_trusted,
    cheapest_card,
    check,
    is_legal,
    legal_actions,
    legal_cards,
    new_match,
    opening_events,
    pack_for,
)
from .rules import PRESETS, Rules
from .score import LAST_TRICK_POINTS, match_points_awarded
from .state import SIDE_SEATS, State, Status, side_of
from .view import View, view

__all__ = [
    "EXCHANGE",
    "FORFEIT",
    "LAST_TRICK_POINTS",
    "NUM_CARDS",
    "NUM_PLAYER_ACTIONS",
    "PRESETS",
    "SIDE_SEATS",
    "SING",
    "TIMEOUT",
    "TUTE_11",
    "TUTE_12",
    "Action",
    "ActionKind",
    "Card",
    "Event",
    "HandResult",
    "IllegalAction",
    "InvalidInput",
    "InvalidOption",
    "Mask",
    "Rules",
    "Standing",
    "State",
    "Status",
    "TuteError",
    "View",
    "action_text",
    "apply",
    "apply_trusted",
    "card_text",
    "cards_of",
    "cheapest_card",
    "check",
    "decode_state",
    "encode_state",
    "is_card",
    "is_legal",
    "is_sing",
    "kind_of",
    "legal_actions",
    "legal_cards",
    "mask_of",
    "mask_text",
    "match_points_awarded",
    "new_match",
    "opening_events",
    "pack_for",
    "parse_action",
    "parse_card",
    "parse_cards",
    "redact",
    "side_of",
    "view",
    "visible_cards",
]
