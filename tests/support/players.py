"""Ranked players for tests: a matchmaking directory over the player store, and a scripted
client that plays a ranked match's human seats to the end through gRPC.

:func:`guests` makes the store's guest of each token
(``players.create_guest(name, hash_token(token))``): the server's matchmaking directory finds
them by their token's hash, so the player ids it binds seats to are the store's, and the
ratings written at a match's end are read back by the next FindMatch.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence

from service.auth import hash_token
from service.players import Player, PlayerStore
from tute.v1 import service_pb2, service_pb2_grpc, view_pb2

from .wait import eventually

Stub = service_pb2_grpc.TuteServiceStub
FINISHED = 3  # TABLE_STATUS_FINISHED


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def guests(players: PlayerStore, tokens: Sequence[str]) -> list[Player]:
    """A guest in the store for each token."""
    return [await players.create_guest(f"P{i}", hash_token(t)) for i, t in enumerate(tokens)]


async def new_guests(players: PlayerStore, n: int) -> tuple[list[str], list[Player]]:
    """``n`` fresh bearer tokens, and a guest in the store for each (:func:`guests`)."""
    tokens = [secrets.token_urlsafe(16) for _ in range(n)]
    return tokens, await guests(players, tokens)


async def view(stub: Stub, table_id: str, token: str) -> view_pb2.TableView:
    req = service_pb2.GetTableRequest(table_id=table_id)
    found: view_pb2.TableView = (await stub.GetTable(req, metadata=auth(token))).view
    return found


async def play_to_the_end(
    stub: Stub, table_id: str, tokens: Sequence[str], rng: random.Random, *, timeout: float = 60
) -> int:
    """The human seats of ``tokens`` play random legal actions until the match is over (the
    bots, if any, play on the server meanwhile); returns the actions sent."""
    sent = 0
    while True:
        acted = False
        for token in tokens:
            v = await view(stub, table_id, token)
            if v.status == FINISHED:
                return sent
            if v.legal_actions:
                await stub.SubmitAction(
                    service_pb2.SubmitActionRequest(
                        table_id=table_id, action=rng.choice(list(v.legal_actions))
                    ),
                    metadata=auth(token),
                )
                sent += 1
                acted = True
        if not acted:  # a bot's turn: wait until a human seat may act (bounded)

            async def humans_turn() -> bool:
                for token in tokens:
                    v = await view(stub, table_id, token)
                    if v.status == FINISHED or v.legal_actions:
                        return True
                return False

            await eventually(humans_turn, timeout=timeout, what="a bot's move")
