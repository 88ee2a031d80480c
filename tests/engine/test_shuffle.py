"""``tute-shuffle-v1``: the published vectors, permutations, uniformity, rejection sampling, verify.

The statistical tests run over fixed seed sets, so each draws the same packs on every run: a
threshold that passes once passes always, and the thresholds are set where a biased shuffle
(the modulo shortcut, a fixed card, hands that follow each other) lands far beyond them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine import PRESETS, Rules, card_text
from engine.game import new_match, pack_for
from engine.shuffle import (
    ALGORITHM,
    FAIRNESS_REASONS,
    FairnessError,
    commitment,
    deal_message,
    draw_below,
    shuffle,
    shuffle_pack,
    stream_block,
    verify,
)

VECTORS = Path(__file__).resolve().parents[2] / "docs" / "fair-deals-vectors.json"
RULES_4P = Rules.preset("parejas")


def _seed(i: int) -> bytes:
    return hashlib.sha256(b"test seed %d" % i).digest()


def _reference(seed: bytes, client_seeds: list[str], hand_no: int, pack_size: int) -> list[int]:
    """docs/fair-deals.md read literally: a second implementation to check the engine by."""
    pack = [c for c in range(40) if pack_size == 40 or c != 1]
    msg = b"tute-shuffle-v1\x00deal\x00" + hand_no.to_bytes(4, "big") + bytes([pack_size])
    msg += bytes([len(client_seeds)])
    for s in client_seeds:
        data = s.encode()
        msg += bytes([len(data)]) + data

    def stream() -> Any:
        i = 0
        while True:
            yield from hmac.new(seed, msg + i.to_bytes(4, "big"), "sha256").digest()
            i += 1

    byte = stream()
    for i in range(pack_size - 1, 0, -1):
        bound = i + 1
        b = next(byte)
        while b >= 256 - 256 % bound:
            b = next(byte)
        j = b % bound
        pack[i], pack[j] = pack[j], pack[i]
    return pack


def _chi_square(observed: list[int], expected: float) -> float:
    return sum((o - expected) ** 2 / expected for o in observed)


# -- the published vectors --------------------------------------------------------------------


def _vectors() -> list[dict[str, Any]]:
    doc = json.loads(VECTORS.read_text(encoding="utf-8"))
    assert doc["algorithm"] == ALGORITHM == "tute-shuffle-v1"
    vectors: list[dict[str, Any]] = doc["vectors"]
    return vectors


@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: f"{v['preset']}-h{v['hand_no']}")
def test_published_vectors(vector: dict[str, Any]) -> None:
    rules = Rules.preset(vector["preset"])
    assert rules.players == vector["players"]
    seed = bytes.fromhex(vector["server_seed"])
    seeds = vector["client_seeds"]
    pack = shuffle(seed, seeds, vector["hand_no"], rules)
    assert commitment(seed).hex() == vector["commitment"]
    msg = deal_message(seeds, vector["hand_no"], len(pack_for(rules)))
    assert msg.hex() == vector["message"]
    assert stream_block(seed, msg, 0).hex() == vector["block_0"]
    assert list(pack) == vector["pack"]
    assert " ".join(card_text(c) for c in pack) == vector["pack_text"]
    assert list(pack) == _reference(seed, seeds, vector["hand_no"], len(pack))
    assert (
        verify(
            bytes.fromhex(vector["commitment"]),
            seed,
            seeds,
            vector["hand_no"],
            rules,
            pack=vector["pack"],
        )
        == pack
    )


def test_vectors_cover_every_pack_size_and_edge() -> None:
    vectors = _vectors()
    assert {v["players"] for v in vectors} == {2, 3, 4}
    assert max(v["hand_no"] for v in vectors) == 2**32 - 1
    assert any(len(s.encode()) == 64 for v in vectors for s in v["client_seeds"])
    assert any(not s.isascii() for v in vectors for s in v["client_seeds"])


def test_the_engine_matches_the_reference_on_many_inputs() -> None:
    for i in range(200):
        rules = Rules.preset(sorted(PRESETS)[i % len(PRESETS)])
        seeds = [f"s{i}-{k}" if (i + k) % 3 else "" for k in range(rules.players)]
        pack = shuffle(_seed(i), seeds, 1 + i % 17, rules)
        assert list(pack) == _reference(_seed(i), seeds, 1 + i % 17, len(pack))


# -- permutations and uniformity ----------------------------------------------------------------


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_pack_is_a_permutation_of_the_rules_pack(preset: str) -> None:
    rules = Rules.preset(preset)
    for i in range(300):
        pack = shuffle(_seed(i), ("a",) * rules.players, 1 + i, rules)
        assert sorted(pack) == list(pack_for(rules))
    assert (1 in shuffle(_seed(0), (), 1, rules)) == (rules.players != 3)


def test_card_positions_are_uniform() -> None:
    """Chi-square over the 40 x 40 (position, card) table of 4,000 packs."""
    n = 4000
    counts = [[0] * 40 for _ in range(40)]
    for i in range(n):
        for pos, card in enumerate(shuffle(_seed(i), (), 1, RULES_4P)):
            counts[pos][card] += 1
    stat = _chi_square([c for row in counts for c in row], n / 40)
    df = 39 * 39
    # mean df, sd sqrt(2 df) ~ 55.2: the bound is 4 sd above (p < 1e-4).
    assert stat < df + 4 * (2 * df) ** 0.5, stat
    assert stat > df - 4 * (2 * df) ** 0.5, stat  # not suspiciously even either


def test_the_last_place_is_uniform_and_the_modulo_shortcut_is_not() -> None:
    """Chi-square of the card in the last place (the first draw, bound 40) over 20,000 packs.

    The modulo shortcut (``byte % 40`` with no rejection) gives cards 0..15 7/256 each and the
    others 6/256: over the same stream bytes it lands far beyond the bound the real shuffle
    stays under.
    """
    n = 20000
    fair = [0] * 40
    biased = [0] * 40
    msg = deal_message((), 1, 40)
    for i in range(n):
        fair[shuffle(_seed(i), (), 1, RULES_4P)[39]] += 1
        biased[stream_block(_seed(i), msg, 0)[0] % 40] += 1
    bound = 39 + 4 * 78**0.5  # 39 degrees of freedom, 4 sd above the mean
    assert _chi_square(fair, n / 40) < bound
    assert _chi_square(biased, n / 40) > 1.5 * bound


def test_hands_of_one_seed_are_independent() -> None:
    """Hand 1 and hand 2 of a seed: cards in the same place, and the first card's suits."""
    n = 4000
    same_place = 0
    joint: Counter[tuple[int, int]] = Counter()
    for i in range(n):
        one = shuffle(_seed(i), ("x",), 1, RULES_4P)
        two = shuffle(_seed(i), ("x",), 2, RULES_4P)
        same_place += sum(a == b for a, b in zip(one, two, strict=True))
        joint[one[0] // 10, two[0] // 10] += 1
    # Two independent permutations share 1 fixed place on average (variance 1).
    assert abs(same_place / n - 1) < 4 * (1 / n) ** 0.5
    stat = _chi_square([joint[a, b] for a in range(4) for b in range(4)], n / 16)
    assert stat < 9 + 4 * 18**0.5  # 9 degrees of freedom


def test_every_input_changes_the_pack() -> None:
    base = shuffle(_seed(1), ("ana", "", "luis", ""), 3, RULES_4P)
    assert shuffle(_seed(2), ("ana", "", "luis", ""), 3, RULES_4P) != base
    assert shuffle(_seed(1), ("anb", "", "luis", ""), 3, RULES_4P) != base
    assert shuffle(_seed(1), ("", "ana", "luis", ""), 3, RULES_4P) != base
    assert shuffle(_seed(1), ("ana", "", "luis"), 3, RULES_4P) != base
    assert shuffle(_seed(1), ("ana", "", "luis", ""), 4, RULES_4P) != base
    # Lengths are framed: moving a byte from one seed to the next changes the message.
    assert deal_message(("ab", "c"), 1, 40) != deal_message(("a", "bc"), 1, 40)


# -- rejection sampling -------------------------------------------------------------------------


@pytest.mark.parametrize("bound", range(2, 41))
def test_rejection_at_the_boundary(bound: int) -> None:
    limit = 256 - 256 % bound
    assert draw_below(bound, limit - 1) == (limit - 1) % bound
    assert draw_below(bound, 0) == 0
    for byte in range(limit, 256):
        assert draw_below(bound, byte) == -1
    hits = Counter(draw_below(bound, b) for b in range(limit))
    assert set(hits) == set(range(bound))
    assert set(hits.values()) == {limit // bound}


def test_a_rejected_byte_is_skipped_not_reduced() -> None:
    """A seed whose first stream byte is rejected for bound 40 (>= 240): the shuffle skips it."""
    msg = deal_message((), 1, 40)
    seed = next(s for s in map(_seed, range(1000)) if stream_block(s, msg, 0)[0] >= 240)
    block = stream_block(seed, msg, 0)
    pack = shuffle(seed, (), 1, RULES_4P)
    accepted = next(b for b in block if b < 240)
    assert pack[39] == accepted % 40  # the last place holds the first accepted draw
    assert pack[39] != block[0] % 40 or accepted % 40 == block[0] % 40


def test_the_stream_continues_into_later_blocks() -> None:
    """A pack that needs more than 32 bytes reads block 1 (a 40-card pack usually does)."""
    long_pack = list(range(200))
    shuffled = shuffle_pack(_seed(3), (), 1, long_pack)
    assert sorted(shuffled) == long_pack
    assert shuffled != tuple(long_pack)


# -- verify -------------------------------------------------------------------------------------


def test_verify_accepts_the_committed_seed() -> None:
    seed = _seed(9)
    pack = shuffle(seed, ("a", "b"), 5, Rules.preset("corriente-6"))
    assert verify(commitment(seed), seed, ("a", "b"), 5, Rules.preset("corriente-6"), pack) == pack


def test_a_tampered_seed_fails_verify() -> None:
    seed = _seed(9)
    for i in range(32):
        tampered = seed[:i] + bytes([seed[i] ^ 1]) + seed[i + 1 :]
        with pytest.raises(FairnessError) as err:
            verify(commitment(seed), tampered, (), 1, RULES_4P)
        assert err.value.reason == "commitment_mismatch"


def test_a_tampered_commitment_fails_verify() -> None:
    seed = _seed(9)
    bad = bytearray(commitment(seed))
    bad[31] ^= 0x80
    with pytest.raises(FairnessError) as err:
        verify(bytes(bad), seed, (), 1, RULES_4P)
    assert err.value.reason == "commitment_mismatch"


def test_a_tampered_client_seed_or_hand_fails_verify() -> None:
    seed = _seed(9)
    pack = shuffle(seed, ("ana", "luis"), 2, Rules.preset("corriente-6"))
    rules = Rules.preset("corriente-6")
    for seeds, hand in (
        (("anA", "luis"), 2),
        (("ana", "luiz"), 2),
        (("ana", ""), 2),
        (("ana", "luis"), 3),
    ):
        with pytest.raises(FairnessError) as err:
            verify(commitment(seed), seed, seeds, hand, rules, pack)
        assert err.value.reason == "pack_mismatch"
    swapped = list(pack)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    with pytest.raises(FairnessError) as err:
        verify(commitment(seed), seed, ("ana", "luis"), 2, rules, swapped)
    assert err.value.reason == "pack_mismatch"


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (lambda: commitment(b"short"), "bad_seed"),
        (lambda: shuffle(bytes(33), (), 1, RULES_4P), "bad_seed"),
        (lambda: verify(b"x" * 31, bytes(32), (), 1, RULES_4P), "bad_commitment"),
        (lambda: shuffle(bytes(32), ("x" * 65,), 1, RULES_4P), "bad_client_seed"),
        (lambda: shuffle(bytes(32), ("ñ" * 33,), 1, RULES_4P), "bad_client_seed"),
        (lambda: shuffle(bytes(32), ("a\nb",), 1, RULES_4P), "bad_client_seed"),
        (lambda: shuffle(bytes(32), (7,), 1, RULES_4P), "bad_client_seed"),  # type: ignore[arg-type]
        (lambda: shuffle(bytes(32), (), 0, RULES_4P), "bad_hand_no"),
        (lambda: shuffle(bytes(32), (), 2**32, RULES_4P), "bad_hand_no"),
    ],
)
def test_malformed_input_has_a_precise_reason(call: Any, reason: str) -> None:
    with pytest.raises(FairnessError) as err:
        call()
    assert err.value.reason == reason
    assert reason in FAIRNESS_REASONS


def test_the_engine_deals_a_given_pack_as_specified() -> None:
    """A shuffled pack given to new_match is dealt from its first card (docs/fair-deals.md)."""
    pack = shuffle(_seed(4), (), 1, RULES_4P)
    state = new_match(RULES_4P, 1, decks=[pack])
    dealer = state.dealer
    for k, card in enumerate(pack):
        assert state.hands[(dealer + 1 + k) % 4] >> card & 1
    assert state.trump_card == pack[-1]
    rules = Rules.preset("corriente-6")
    pack2 = shuffle(_seed(4), (), 1, rules)
    state2 = new_match(rules, 1, decks=[pack2])
    assert state2.trump_card == pack2[12]
    assert state2.stock == (*pack2[13:], pack2[12])
