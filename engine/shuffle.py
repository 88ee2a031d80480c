"""Provably fair deals: ``tute-shuffle-v1``, a committed server seed and a keyed shuffle.

Each hand has a fresh 256-bit *server seed*. Before the hand is dealt the server publishes its
*commitment*, a SHA-256 digest of the seed; when the hand ends it reveals the seed. Seated
players may add *client seeds*. The pack is a Fisher-Yates shuffle of the rules' pack
(:func:`engine.game.pack_for`, card-number order) driven by an HMAC-SHA256 counter stream keyed
by the server seed over the client seeds and the hand number, one byte per draw with rejection
sampling (no modulo bias). ``docs/fair-deals.md`` specifies every byte; its test vectors are in
``docs/fair-deals-vectors.json``.

Anyone holding the revealed seed checks a deal with :func:`verify`:

>>> from engine import Rules
>>> seed = bytes(range(32))
>>> rules = Rules.preset("parejas")
>>> pack = verify(commitment(seed), seed, ("ana",), 1, rules)
>>> pack == shuffle(seed, ("ana",), 1, rules) and sorted(pack) == list(range(40))
True
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Final

from .cards import Card
from .errors import TuteError
from .game import pack_for
from .rules import Rules

ALGORITHM: Final = "tute-shuffle-v1"
"""The name and version of this algorithm; records carry it."""
SEED_BYTES: Final = 32
"""A server seed is 32 bytes (256 bits)."""
MAX_CLIENT_SEED_BYTES: Final = 64
"""A client seed is a UTF-8 string of at most 64 bytes (the empty string: no seed)."""
MAX_HAND_NO: Final = 0xFFFFFFFF

_COMMIT_PREFIX: Final = b"tute-shuffle-v1\x00commit\x00"
_DEAL_PREFIX: Final = b"tute-shuffle-v1\x00deal\x00"


class FairnessError(TuteError):
    """A deal that does not check out, or malformed fairness input; ``reason`` says which.

    Reasons: ``bad_seed`` (not 32 bytes), ``bad_commitment`` (not 32 bytes),
    ``bad_client_seed`` (not a string of at most 64 UTF-8 bytes), ``bad_hand_no``,
    ``commitment_mismatch`` (the seed does not hash to the commitment), ``pack_mismatch``
    (the seed, client seeds and hand number shuffle to another pack).
    """


FAIRNESS_REASONS: tuple[str, ...] = (
    "bad_seed",
    "bad_commitment",
    "bad_client_seed",
    "bad_hand_no",
    "commitment_mismatch",
    "pack_mismatch",
)
"""Every reason a :class:`FairnessError` may carry."""


def _check_seed(seed: bytes) -> bytes:
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise FairnessError("bad_seed", f"a server seed is {SEED_BYTES} bytes")
    return seed


def commitment(seed: bytes) -> bytes:
    """The published commitment to a server seed.

    SHA-256 over ``tute-shuffle-v1``, a zero byte, ``commit``, a zero byte and the seed.
    """
    return hashlib.sha256(_COMMIT_PREFIX + _check_seed(seed)).digest()


def encode_client_seed(client_seed: object) -> bytes:
    """A client seed's bytes (UTF-8); :class:`FairnessError` ``bad_client_seed`` if invalid."""
    if not isinstance(client_seed, str) or not client_seed.isprintable():
        raise FairnessError("bad_client_seed", "a client seed is printable text")
    data = client_seed.encode("utf-8")
    if len(data) > MAX_CLIENT_SEED_BYTES:
        raise FairnessError(
            "bad_client_seed",
            f"a client seed is printable text of at most {MAX_CLIENT_SEED_BYTES} UTF-8 bytes",
        )
    return data


def deal_message(client_seeds: Sequence[str], hand_no: int, pack_size: int) -> bytes:
    """The message the stream is keyed over (docs/fair-deals.md, "The message")."""
    if not isinstance(hand_no, int) or not 1 <= hand_no <= MAX_HAND_NO:
        raise FairnessError("bad_hand_no", "a hand number is 1..2**32-1")
    if len(client_seeds) > 255:
        raise FairnessError("bad_client_seed", "at most 255 client seeds")
    parts = [
        _DEAL_PREFIX,
        hand_no.to_bytes(4, "big"),
        pack_size.to_bytes(1, "big"),
        len(client_seeds).to_bytes(1, "big"),
    ]
    items: tuple[object, ...] = tuple(client_seeds)  # checked one by one, compiled or not
    for s in items:
        data = encode_client_seed(s)
        parts.append(len(data).to_bytes(1, "big"))
        parts.append(data)
    return b"".join(parts)


def stream_block(seed: bytes, message: bytes, counter: int) -> bytes:
    """Block ``counter`` of the stream: HMAC-SHA256(seed, message + counter as 4 bytes BE)."""
    return hmac.new(seed, message + counter.to_bytes(4, "big"), hashlib.sha256).digest()


def draw_below(bound: int, byte: int) -> int:
    """The draw a stream byte gives for a bound (2..256), or -1 when the byte is rejected.

    Bytes at or above ``256 - 256 % bound`` are rejected; the others give ``byte % bound``,
    so every result in ``0..bound-1`` comes from the same number of bytes.
    """
    limit = 256 - 256 % bound
    if byte >= limit:
        return -1
    return byte % bound


def shuffle_pack(
    seed: bytes, client_seeds: Sequence[str], hand_no: int, pack: Sequence[Card]
) -> tuple[Card, ...]:
    """``pack`` shuffled by ``tute-shuffle-v1`` (any pack of at most 255 cards)."""
    key = _check_seed(seed)
    cards = list(pack)
    message = deal_message(client_seeds, hand_no, len(cards))
    block = b""
    pos = 0
    counter = 0
    i = len(cards) - 1
    while i > 0:
        if pos == len(block):
            block = stream_block(key, message, counter)
            counter += 1
            pos = 0
        j = draw_below(i + 1, block[pos])
        pos += 1
        if j < 0:
            continue
        c = cards[i]
        cards[i] = cards[j]
        cards[j] = c
        i -= 1
    return tuple(cards)


def shuffle(
    seed: bytes, client_seeds: Sequence[str], hand_no: int, rules: Rules
) -> tuple[Card, ...]:
    """The pack of hand ``hand_no`` for these rules in deal order (its first card dealt first)."""
    return shuffle_pack(seed, client_seeds, hand_no, pack_for(rules))


def verify(
    commitment_: bytes,
    seed: bytes,
    client_seeds: Sequence[str],
    hand_no: int,
    rules: Rules,
    pack: Sequence[Card] | None = None,
) -> tuple[Card, ...]:
    """The hand's pack, after checking that ``seed`` is the one ``commitment_`` committed to.

    Raises :class:`FairnessError`: ``commitment_mismatch`` when the seed does not hash to the
    commitment, ``pack_mismatch`` when ``pack`` is given and the shuffle gives another one, or
    a ``bad_*`` reason for malformed input.
    """
    if not isinstance(commitment_, bytes) or len(commitment_) != 32:
        raise FairnessError("bad_commitment", "a commitment is 32 bytes")
    if not hmac.compare_digest(commitment(seed), commitment_):
        raise FairnessError(
            "commitment_mismatch", f"hand {hand_no}: the seed does not match its commitment"
        )
    dealt = shuffle(seed, client_seeds, hand_no, rules)
    if pack is not None and tuple(pack) != dealt:
        raise FairnessError(
            "pack_mismatch",
            f"hand {hand_no}: the seed and client seeds shuffle to another pack",
        )
    return dealt
