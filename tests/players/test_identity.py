"""Player credentials over real gRPC: guests (CreatePlayer's player token) and JWTs (HS256,
RS256, ES256) accepted; every bad JWT refused with UNAUTHENTICATED, its reason and a message
saying what is wrong, never the token (in errors or log lines); a player-bound ranked seat
opened by a refreshed JWT of its player; the JWT settings checked at start. The server runs on
a fake clock: a JWT's times are checked on it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from service.server import Server, StartupError, create_server
from tests.service.conftest import FAST
from tests.service.helpers import auth, registered_reason
from tests.service.visibility import LogBuffer
from tests.support import jwts
from tests.support.clock import FakeClock
from tests.support.jwts import Keys, claims, jwt_settings, make_keys, signed, unsigned
from tute.v1 import service_pb2, service_pb2_grpc

Code = grpc.StatusCode
Stub = service_pb2_grpc.TuteServiceStub
LEEWAY = 30.0


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return make_keys(tmp_path_factory.mktemp("jwks"))


@dataclasses.dataclass
class Running:
    server: Server
    stub: Stub
    clock: FakeClock


@pytest.fixture
async def running(keys: Keys, tmp_path: Path) -> AsyncIterator[Running]:
    clock = FakeClock()
    settings = jwt_settings(
        FAST, keys, jwt_leeway_s=LEEWAY, players=f"sqlite://{tmp_path / 'players.db'}"
    )
    srv = await create_server(settings, clock=clock)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            yield Running(srv, Stub(ch), clock)
    finally:
        await srv.shutdown()


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    return err.value


async def me(stub: Stub, token: str) -> service_pb2.GetPlayerResponse:
    """The caller's own profile (GetPlayer with an empty id)."""
    got: service_pb2.GetPlayerResponse = await stub.GetPlayer(
        service_pb2.GetPlayerRequest(), metadata=auth(token)
    )
    return got


async def test_a_guest_is_created_and_queues_with_its_player_token(running: Running) -> None:
    stub = running.stub
    made = await stub.CreatePlayer(service_pb2.CreatePlayerRequest(display_name="  Ana  "))
    token, player = made.player_token, made.player
    assert token and player.player_id and player.display_name == "Ana"
    assert [(r.mode, r.rating, r.provisional, r.games) for r in player.ratings] == [
        ("2p", 1500, True, 0),
        ("3p", 1500, True, 0),
        ("4p", 1500, True, 0),
    ]
    # only the hash is kept: the store finds the guest by it, never holds the token
    store = running.server.app.players
    assert (await store.get(player.player_id)) is not None
    got = await stub.GetPlayer(service_pb2.GetPlayerRequest(player_id=player.player_id))
    assert got.player.display_name == "Ana" and got.player.player_id == player.player_id
    assert (await me(stub, token)).player.player_id == player.player_id
    found = await stub.FindMatch(service_pb2.FindMatchRequest(mode="2p"), metadata=auth(token))
    assert found.ticket_id and found.waiting.queued == 1

    for call in (
        stub.FindMatch(service_pb2.FindMatchRequest(mode="2p"), metadata=auth("made-up-token")),
        stub.GetPlayer(service_pb2.GetPlayerRequest(), metadata=auth("made-up-token")),
    ):
        err = await refused(call)
        assert (err.code(), registered_reason(err)) == (Code.UNAUTHENTICATED, "UNKNOWN_PLAYER")
        assert "made-up-token" not in (err.details() or "")
    err = await refused(stub.CreatePlayer(service_pb2.CreatePlayerRequest(display_name=" ")))
    assert (err.code(), registered_reason(err)) == (Code.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    err = await refused(stub.GetPlayer(service_pb2.GetPlayerRequest()))
    assert err.code() == Code.INVALID_ARGUMENT  # no id and no credential
    err = await refused(stub.GetPlayer(service_pb2.GetPlayerRequest(player_id="p-nobody")))
    assert (err.code(), registered_reason(err)) == (Code.NOT_FOUND, "PLAYER_NOT_FOUND")
    err = await refused(stub.GetPlayer(service_pb2.GetPlayerRequest(player_id="bot:easy")))
    assert registered_reason(err) == "PLAYER_NOT_FOUND"  # bots are no players


@pytest.mark.parametrize("alg", ["HS256", "RS256", "ES256"])
async def test_a_valid_jwt_is_its_subjects_player(running: Running, keys: Keys, alg: str) -> None:
    key: Any = {"HS256": jwts.SECRET, "RS256": keys.rsa, "ES256": keys.ec}[alg]
    kid = {"HS256": None, "RS256": "rsa-1", "ES256": "ec-1"}[alg]
    headers = {"kid": kid} if kid else {}
    now = running.clock()
    token = signed(claims(now, sub="u-42", name="Lola"), alg, key, **headers)
    first = (await me(running.stub, token)).player
    assert first.display_name == "Lola" and first.player_id
    # a fresh token of the same subject (another algorithm, another name) is the same player
    again = signed(claims(now + 60, sub="u-42", name="Otra"), "HS256", jwts.SECRET)
    running.clock.advance(60)
    assert (await me(running.stub, again)).player == first
    other = signed(claims(now, sub="u-43"), alg, key, **headers)
    them = (await me(running.stub, other)).player
    assert them.player_id != first.player_id
    assert them.display_name.startswith("Player ")  # no name claim: a default name
    found = await running.stub.FindMatch(
        service_pb2.FindMatchRequest(mode="3p"), metadata=auth(token)
    )
    assert found.ticket_id
    # at the leeway's edge: 30 s past exp still accepted (a new token, not the cached one)
    edge = signed(claims(running.clock(), sub="u-42", exp=int(running.clock()) - 29))
    assert (await me(running.stub, edge)).player.player_id == first.player_id


def _cases(now: float, keys: Keys) -> list[tuple[str, str, str, str]]:
    """(name, token, reason, words of the message) of each bad JWT."""
    other_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other_ec = ec.generate_private_key(ec.SECP256R1())
    ok = claims(now)
    return [
        ("expired", signed(claims(now, exp=int(now) - 31)), "TOKEN_EXPIRED", "expired"),
        ("not yet valid", signed(claims(now, nbf=int(now) + 31)), "TOKEN_NOT_YET_VALID", "nbf"),
        ("issued later", signed(claims(now, iat=int(now) + 31)), "TOKEN_NOT_YET_VALID", "iat"),
        (
            "wrong issuer",
            signed(claims(now, iss="https://evil.example")),
            "WRONG_ISSUER",
            "issuer",
        ),
        ("wrong audience", signed(claims(now, aud="other-game")), "WRONG_AUDIENCE", "audience"),
        ("no exp", signed(claims(now, exp=None)), "MALFORMED_TOKEN", "'exp'"),
        ("no sub", signed(claims(now, sub=None)), "MALFORMED_TOKEN", "'sub'"),
        (
            "wrong secret",
            signed(ok, key="another-secret-of-forty-bytes-987654321"),
            "INVALID_SIGNATURE",
            "signature",
        ),
        (
            "wrong RSA key",
            signed(ok, "RS256", other_rsa, kid="rsa-1"),
            "INVALID_SIGNATURE",
            "signature",
        ),
        ("wrong EC key", signed(ok, "ES256", other_ec), "INVALID_SIGNATURE", "signature"),
        (
            "unknown kid",
            signed(ok, "RS256", keys.rsa, kid="rsa-9"),
            "INVALID_SIGNATURE",
            "signature",
        ),
        ("changed payload", _tampered(signed(ok)), "INVALID_SIGNATURE", "signature"),
        ("alg none", unsigned(ok), "UNSUPPORTED_ALGORITHM", "algorithm"),
        ("HS384", signed(ok, "HS384"), "UNSUPPORTED_ALGORITHM", "algorithm"),
        ("RS512", signed(ok, "RS512", keys.rsa), "UNSUPPORTED_ALGORITHM", "algorithm"),
        ("PS256", signed(ok, "PS256", keys.rsa), "UNSUPPORTED_ALGORITHM", "algorithm"),
        ("not base64", "eyJ!.eyJ.abc", "UNKNOWN_PLAYER", "player credential"),
        ("bad header", "bm90LWpzb24.eyJ9.c2ln", "MALFORMED_TOKEN", "header"),
    ]


def _tampered(token: str) -> str:
    """The token with its payload's subject changed, signature kept."""
    head, body, sig = token.split(".")
    payload = json.loads(jwt.utils.base64url_decode(body))
    payload["sub"] = "someone-else"
    forged = jwt.utils.base64url_encode(json.dumps(payload).encode()).decode()
    return f"{head}.{forged}.{sig}"


async def test_every_bad_jwt_is_refused_with_its_reason_and_never_shown(
    running: Running, keys: Keys
) -> None:
    stub = running.stub
    cases = _cases(running.clock(), keys)
    with LogBuffer() as logs:
        for name, token, reason, words in cases:
            for call in (
                stub.FindMatch(service_pb2.FindMatchRequest(mode="2p"), metadata=auth(token)),
                stub.GetPlayer(service_pb2.GetPlayerRequest(), metadata=auth(token)),
            ):
                err = await refused(call)
                assert (err.code(), registered_reason(err)) == (
                    Code.UNAUTHENTICATED,
                    reason,
                ), name
                details = err.details() or ""
                assert words in details, (name, details)
                for part in token.split("."):
                    assert not part or part not in details, name
    text = logs.text
    assert "rpc_error" in text  # the refusals were logged...
    for name, token, _, _ in cases:
        for part in token.split("."):
            assert len(part) < 8 or part not in text, f"{name}: a token's part in the log"


async def test_a_refreshed_jwt_opens_its_players_ranked_seat(running: Running) -> None:
    stub, clock = running.stub, running.clock
    first = {sub: signed(claims(clock(), sub=sub)) for sub in ("ana", "bea")}

    async def queue(token: str) -> Any:
        ticket = (
            await stub.FindMatch(service_pb2.FindMatchRequest(mode="2p"), metadata=auth(token))
        ).ticket_id
        call = stub.WatchTicket(
            service_pb2.WatchTicketRequest(ticket_id=ticket), metadata=auth(token)
        )
        return [m async for m in call][-1].matched

    matched = await asyncio.wait_for(asyncio.gather(*(queue(t) for t in first.values())), 30)
    table_id = matched[0].table_id
    ana_seat = matched[0].seat
    view = (
        await stub.GetTable(
            service_pb2.GetTableRequest(table_id=table_id), metadata=auth(first["ana"])
        )
    ).view
    assert view.my_seat == ana_seat
    ana_id = (await me(stub, first["ana"])).player.player_id
    assert view.seats[ana_seat].player_id == ana_id
    clock.advance(3600 + LEEWAY + 1)  # the first JWTs have expired
    err = await refused(
        stub.GetTable(service_pb2.GetTableRequest(table_id=table_id), metadata=auth(first["ana"]))
    )
    assert (err.code(), registered_reason(err)) == (Code.UNAUTHENTICATED, "TOKEN_EXPIRED")
    fresh = signed(claims(clock(), sub="ana"))
    view = (
        await stub.GetTable(service_pb2.GetTableRequest(table_id=table_id), metadata=auth(fresh))
    ).view
    assert view.my_seat == ana_seat and view.hand  # its own hand: the seat is open
    stream = stub.WatchTable(service_pb2.WatchTableRequest(table_id=table_id), metadata=auth(fresh))
    snapshot = await stream.read()
    assert snapshot.snapshot.my_seat == ana_seat
    stream.cancel()
    stranger = signed(claims(clock(), sub="carla"))
    err = await refused(
        stub.GetTable(service_pb2.GetTableRequest(table_id=table_id), metadata=auth(stranger))
    )
    assert (err.code(), registered_reason(err)) == (Code.PERMISSION_DENIED, "NOT_SEATED")
    left = await stub.LeaveTable(
        service_pb2.LeaveTableRequest(table_id=table_id), metadata=auth(fresh)
    )
    assert left.forfeited
    err = await refused(
        stub.GetTable(service_pb2.GetTableRequest(table_id=table_id), metadata=auth(fresh))
    )
    assert registered_reason(err) == "NOT_SEATED"  # a left seat opens for nobody


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"jwt_leeway_s": 301.0}, "jwt_leeway_s"),
        ({"jwt_leeway_s": -1.0}, "jwt_leeway_s"),
        ({"jwt_secret": "short"}, "at least 32 bytes"),
        ({"jwt_issuer": ""}, "jwt_issuer"),
        ({"jwt_audience": ""}, "jwt_audience"),
        ({"jwt_jwks_file": "/nonexistent/jwks.json"}, "jwt_jwks_file"),
        ({"jwt_secret_file": "/nonexistent/secret"}, "give jwt_secret or jwt_secret_file"),
    ],
)
async def test_bad_jwt_settings_stop_the_start(change: dict[str, Any], words: str) -> None:
    settings = dataclasses.replace(jwt_settings(FAST), **change)
    with pytest.raises(StartupError, match=words) as err:
        await create_server(settings)
    assert jwts.SECRET not in str(err.value)


async def test_a_jwks_with_a_private_key_stops_the_start(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    entry = json.loads(jwt.get_algorithm_by_name("RS256").to_jwk(key))
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [entry]}))
    settings = dataclasses.replace(FAST, jwt_jwks_file=str(path), jwt_issuer="i", jwt_audience="a")
    with pytest.raises(StartupError, match="private key"):
        await create_server(settings)


async def test_a_secret_file_configures_hs256(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text(jwts.SECRET + "\n")
    settings = dataclasses.replace(
        FAST, jwt_secret_file=str(path), jwt_issuer=jwts.ISSUER, jwt_audience=jwts.AUDIENCE
    )
    clock = FakeClock()
    srv = await create_server(settings, clock=clock)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{srv.port}") as ch:
            got = await me(Stub(ch), signed(claims(clock(), name="Sol")))
            assert got.player.display_name == "Sol"
        assert jwts.SECRET not in repr(srv.settings)
    finally:
        await srv.shutdown()
