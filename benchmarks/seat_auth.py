"""What opening a seat costs on SubmitAction's path, µs per call, interleaved with its baseline.

The baseline is the seat-token check alone (``require_seat(rec, token)``: a hash and a scan of
the seats), as SubmitAction ran it before player seats. The servicer's check
(:meth:`service.servicer.TuteServicer._open`) runs it first and, only when the token opens no
seat by its hash, resolves it as a player credential: a casual table's seat token and a ranked
seat opened by its guest's player token (its hash opens the seat) take the first path; a
ranked seat opened by a refreshed JWT the second (verified once, then a cache hit).

    python -m benchmarks.seat_auth [--calls 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import types
from collections.abc import Awaitable, Callable

import jwt

import engine
from service.auth import hash_token, new_token
from service.identity import Identity, JwtVerifier
from service.players import MemoryPlayerStore
from service.servicer import TuteServicer
from service.tables import changes
from service.tables.access import require_seat
from service.tables.model import HUMAN, TableRecord

SECRET = b"benchmark-secret-" + b"0123456789abcdef" * 3


def _table(bound: list[str]) -> tuple[TableRecord, list[str]]:
    """A started 4p table whose seats are bound to ``bound`` (player ids, '' for none); the
    seats' tokens."""
    rec = changes.new_table(
        "0123456789abcdef",
        "parejas",
        engine.Rules.preset("parejas"),
        private=False,
        invite_code="",
        created_at=0.0,
        owner_token_hash="",
    )
    tokens = []
    for seat, pid in enumerate(bound):
        token, token_hash = new_token()
        tokens.append(token)
        changes.take_seat(
            rec,
            seat,
            HUMAN,
            f"P{seat}",
            token_hash,
            "",
            now=0.0,
            away_from_start=False,
            player_id=pid,
        )
    return rec, tokens


async def _per_call_us(run: Callable[[], Awaitable[object]], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        await run()
    return (time.perf_counter() - t0) / calls * 1e6


async def main(calls: int, rounds: int) -> None:
    players = MemoryPlayerStore()
    verifier = JwtVerifier("https://login.example", "tute", 30.0, "name", SECRET)
    identity = Identity(players, verifier, time.time)
    guest, guest_token = await identity.create_guest("Guest")
    jwt_player = await players.by_subject("https://login.example", "u-1", "Jwt")
    casual, casual_tokens = _table(["", "", "", ""])
    ranked, _ = _table([guest.player_id, jwt_player.player_id, "", ""])
    # the guest's seat opens by its player token's hash, as the matchmaker binds it
    ranked.seats[0].token_hash = hash_token(guest_token)
    now = time.time()
    fresh_jwt = jwt.encode(
        {"iss": "https://login.example", "aud": "tute", "sub": "u-1", "exp": int(now) + 3600},
        SECRET,
        algorithm="HS256",
    )

    async def baseline(rec: TableRecord, token: str) -> int:
        return require_seat(rec, token)

    servicer = types.SimpleNamespace(identity=identity)

    async def fallback(rec: TableRecord, token: str) -> int:
        seat, _ = await TuteServicer._open(servicer, require_seat, rec, token)  # type: ignore[arg-type]
        return seat

    cases = {
        "casual table, seat token": (casual, casual_tokens[1], True),
        "ranked seat, guest's player token": (ranked, guest_token, True),
        "ranked seat, refreshed JWT": (ranked, fresh_jwt, False),
    }
    for name, (rec, token, has_baseline) in cases.items():
        await fallback(rec, token)  # warm: a JWT is verified once, then cached
        base: list[float] = []
        new: list[float] = []
        for _ in range(rounds):
            if has_baseline:
                base.append(await _per_call_us(lambda r=rec, t=token: baseline(r, t), calls))
            new.append(await _per_call_us(lambda r=rec, t=token: fallback(r, t), calls))
        line = f"{name:36} servicer's check {statistics.median(new):6.2f} µs"
        if base:
            line += f"   seat-token check alone {statistics.median(base):6.2f} µs"
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
