"""Events: what :func:`engine.apply` reports, and who may see each part of it.

Every event is a small immutable record. Most are public (every seat and every spectator may
see all of them). Two have private parts, and :func:`redact` blanks them for anyone else:

- :class:`HandDealt` carries every seat's dealt hand; a seat sees only its own (``None``
  for the others), a spectator sees none. The trump card is public.
- :class:`CardDrawn` (2p) carries the drawn card; only the drawer sees it, unless it is the
  turned trump card (``public``), which everybody sees.

The server sends ``redact(event, seat)`` to each seat and ``redact(event, None)`` to
spectators; :func:`visible_cards` lists the cards an event shows to a seat (used by tests).
"""

from __future__ import annotations

from typing import NamedTuple

from .cards import BIT, Card, Mask, card_of


class HandResult(NamedTuple):
    """How a hand ended (RULES.md §9), per side (side = seat % 2 in 4p, the seat otherwise)."""

    hand_no: int
    card_points: tuple[int, ...]
    """Card points of the tricks each side won (0s for a hand ended by tute)."""
    last_trick_side: int
    """The side that won las diez de últimas (-1 for a hand ended by tute)."""
    cante_points: tuple[int, ...]
    """Cantes sung by each side (listed but not scored when the hand ended by tute)."""
    totals: tuple[int, ...]
    """card points + 10 for the last trick + cantes (0s for a tute)."""
    winner: int
    """The hand winner's side, or -1 when tied under ``tie_rule = none``."""
    capote: bool
    tute_seat: int
    """The seat that declared a tute ending the hand, or -1."""
    tute_rank: int
    """12 or 11 for a tute, else 0."""
    tute_cards: Mask
    game_no: int
    """The game the hand belonged to (points system; 1 in the hands system)."""
    tricks_won: tuple[int, ...]
    """Per side: tricks won in the hand."""
    cantes: tuple[tuple[int, int, int, int], ...]
    """The hand's cantes: (seat, suit, points, trick number of their window)."""
    tute_trick: int
    """The trick in whose window the tute was declared (0: no tute)."""


class HandDealt(NamedTuple):
    """A new hand was dealt. ``hands[s]`` is seat s's hand, ``None`` where hidden."""

    hand_no: int
    game_no: int
    dealer: int
    trump_suit: int
    trump_card: Card
    """The card that made trump: the dealer's last card (3p/4p) or the turned card (2p)."""
    hands: tuple[Mask | None, ...]
    stock_size: int


class TrumpExchanged(NamedTuple):
    """The leader gave ``given`` (7 or 2 of trumps) for the turned card ``taken`` (2p, §8)."""

    seat: int
    given: Card
    taken: Card


class Standing(NamedTuple):
    """Per side: where the match stands, and the tally of the hand being (or just) played.

    The same numbers a :class:`~engine.view.View` shows, carried by the events that change
    them (:class:`HandEnded`, :class:`MatchEnded`).
    """

    game_scores: tuple[int, ...]
    """Points in the current game (points system). After a hand that won a game: the game's
    final scores (the next game starts from 0s)."""
    games_won: tuple[int, ...]
    """Games won (points system)."""
    match_points: tuple[int, ...]
    """Match points (hands system)."""
    card_points: tuple[int, ...]
    """Card points of the tricks won in the hand (those won before a tute or a forfeit)."""
    cante_points: tuple[int, ...]
    """Points of the cantes sung in the hand."""
    tricks_won: tuple[int, ...]
    """Tricks won in the hand."""


class CanteSung(NamedTuple):
    """``seat`` sang the 12 and 11 of ``suit``: 40 points if trump, 20 otherwise (§6)."""

    seat: int
    suit: int
    points: int
    trick_no: int
    """The trick whose declaration window the cante was sung in (its winner leads it)."""


class TuteDeclared(NamedTuple):
    """``seat`` showed all four cards of ``rank`` (12 reyes, 11 caballos); the hand ends."""

    seat: int
    rank: int
    cards: Mask
    trick_no: int
    """The trick whose declaration window the tute was declared in."""


class TurnTimedOut(NamedTuple):
    """The turn time of ``seat`` ran out; the server plays its cheapest legal card (§11)."""

    seat: int
    trick_no: int
    """The trick being played."""


class CardPlayed(NamedTuple):
    """``seat`` played ``card`` to the trick; ``auto`` when the server played it on timeout."""

    seat: int
    card: Card
    auto: bool
    trick_no: int
    """The trick the card was played to (1 for the first trick of a hand)."""


class TrickTaken(NamedTuple):
    """Trick ``trick_no`` is complete: ``winner`` takes ``cards`` ((seat, card) in play order)."""

    trick_no: int
    winner: int
    cards: tuple[tuple[int, Card], ...]
    points: int
    """Card points of the trick (without the 10 of the last trick)."""


class CardDrawn(NamedTuple):
    """``seat`` took a card from the stock (2p). ``card`` is ``None`` where hidden."""

    seat: int
    card: Card | None
    public: bool
    """True when the card is the turned trump card, which everybody sees."""
    stock_left: int


class HandEnded(NamedTuple):
    """The hand is over; ``result`` says how (§9), ``standing`` where the match stands."""

    result: HandResult
    standing: Standing
    """The standing once the hand is scored (before the next hand is dealt)."""
    match_points_awarded: int
    """Hands system: the match points the hand winner gained (§10); 0 otherwise (and 0 for a
    tute that wins the match outright)."""


class GameEnded(NamedTuple):
    """A game of the points system is won (§10); ``scores`` are the final game scores."""

    game_no: int
    winner: int
    scores: tuple[int, ...]
    by_tute: bool
    """The game was won by a tute (§7) rather than by reaching the target."""


class PlayerForfeited(NamedTuple):
    """``seat`` left the match (or was forfeited by the server): its side loses (§11)."""

    seat: int


class MatchEnded(NamedTuple):
    """The match is over. ``winners`` are sides; ``reason`` is score, tute or forfeit."""

    winners: tuple[int, ...]
    reason: str
    standing: Standing
    """The final standing, with the tally of the last hand (as far as it went)."""
    forfeited_seat: int
    """The seat whose forfeit ended the match (``reason`` forfeit), else -1."""


Event = (
    HandDealt
    | TrumpExchanged
    | CanteSung
    | TuteDeclared
    | TurnTimedOut
    | CardPlayed
    | TrickTaken
    | CardDrawn
    | HandEnded
    | GameEnded
    | PlayerForfeited
    | MatchEnded
)


def redact(event: Event, seat: int | None) -> Event:
    """The event as ``seat`` may see it (``None``: a spectator)."""
    if isinstance(event, HandDealt):
        hands = tuple(h if s == seat else None for s, h in enumerate(event.hands))
        return event._replace(hands=hands)
    if isinstance(event, CardDrawn) and not event.public and event.seat != seat:
        return event._replace(card=None)
    return event


def visible_cards(event: Event) -> Mask:
    """Every card the (already redacted) event shows, as a mask."""
    m = 0
    if isinstance(event, HandDealt):
        m = BIT[event.trump_card]
        for h in event.hands:
            if h is not None:
                m |= h
    elif isinstance(event, CardDrawn):
        m = 0 if event.card is None else BIT[event.card]
    elif isinstance(event, CardPlayed):
        m = BIT[event.card]
    elif isinstance(event, TrumpExchanged):
        m = BIT[event.given] | BIT[event.taken]
    elif isinstance(event, TuteDeclared):
        m = event.cards
    elif isinstance(event, CanteSung):
        m = BIT[card_of(event.suit, 12)] | BIT[card_of(event.suit, 11)]
    elif isinstance(event, TrickTaken):
        for _, c in event.cards:
            m |= BIT[c]
    elif isinstance(event, HandEnded):
        m = event.result.tute_cards
    return m
