"""Who a bearer credential is: seat tokens, player tokens and JWTs, and the player they name.

A credential travels as ``authorization: Bearer <credential>`` (:func:`service.auth.bearer_token`)
and is one of:

- a **JWT** of the frontend's own login: any token of three base64url parts joined by dots
  (seat and player tokens have no dot). It is only ever verified as a JWT (:class:`JwtVerifier`):
  HS256 with the configured secret, RS256 or ES256 with a key of the configured JWKS file;
  ``alg: none`` and every algorithm no key is configured for are refused; ``exp``, ``iss``
  and ``sub`` are required, ``iss`` and ``aud`` must be the configured ones, ``exp``,
  ``nbf`` and ``iat`` are checked on the server's clock with a bounded leeway. Its
  (``iss``, ``sub``) is a player of the store, created on first sight (named by the
  configured claim, ``name`` by default);
- a **player token** (CreatePlayer's): a guest player, found by the token's hash;
- a **seat token** or **owner token** (JoinTable's, CreateTable's): it opens its own seat (or
  adds bots) at its own table and names no player.

On a call about a table the credential is first matched against the table's seat tokens by
hash (:mod:`service.tables.access`; no store round trip: the hot path). Only when it opens no
seat and the table has a seat bound to a player does :meth:`Identity.seat_player` resolve it
as a player credential, so that any valid credential of a seat's player (a refreshed JWT)
opens that seat. Resolutions are cached by the credential's hash (a JWT until it expires).

Failures are UNAUTHENTICATED with a reason naming what is wrong; no message and no log line
ever contains a credential.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jwt
import structlog

from .auth import hash_token, new_token
from .config import Settings
from .errors import ServiceError, Unauthenticated
from .players import Player, PlayerStore
from .reasons import Reason
from .tables.access import held_by_player
from .tables.model import TableRecord

log = structlog.get_logger("tute.identity")

JWT_SHAPE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")
"""What a JWT looks like (JWS compact serialization); seat and player tokens never do."""
MAX_LEEWAY_S = 300.0
"""The largest clock skew ``jwt_leeway_s`` may allow."""
MIN_SECRET_BYTES = 32
"""An HS256 secret is at least as long as the hash (RFC 7518 §3.2)."""
MAX_SUBJECT = 255
CACHE_SIZE = 10_000
"""Credentials whose player is remembered (by hash), the least recently used dropped first."""
DEFAULT_NAME = "Player"
ASYMMETRIC = {"RS256": "RSA", "ES256": "EC"}
"""The public-key algorithms a JWKS key may be for, and the key type each needs."""


def looks_like_jwt(token: str) -> bool:
    """True when ``token`` has a JWT's shape (three base64url parts joined by dots)."""
    return token.count(".") == 2 and JWT_SHAPE.match(token) is not None


@dataclasses.dataclass(frozen=True, slots=True)
class JwtClaims:
    """What a verified JWT says: its player's (issuer, subject), a name, and its expiry."""

    issuer: str
    subject: str
    name: str
    expires_at: float


def _refused(reason: Reason, message: str) -> Unauthenticated:
    return Unauthenticated(message, reason=reason)


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    """A NumericDate claim (seconds since the epoch), None when absent; MALFORMED_TOKEN when
    it is not a finite number."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _refused(Reason.MALFORMED_TOKEN, f"the JWT's {name!r} claim is not a number")
    return float(value)


@dataclasses.dataclass(frozen=True)
class JwtVerifier:
    """The JWTs a server accepts: its keys by algorithm, the issuer, audience and leeway."""

    issuer: str
    audience: str
    leeway_s: float
    name_claim: str
    secret: bytes = b""
    """The HS256 secret (empty: HS256 is not accepted)."""
    public_keys: tuple[tuple[str, str, Any], ...] = ()
    """(algorithm, kid or '', key) of each JWKS key."""

    @property
    def algorithms(self) -> frozenset[str]:
        algs = {alg for alg, _, _ in self.public_keys}
        if self.secret:
            algs.add("HS256")
        return frozenset(algs)

    def _keys(self, alg: str, kid: object) -> list[Any]:
        if alg == "HS256":
            return [self.secret]
        keys = [(k, key) for a, k, key in self.public_keys if a == alg]
        if isinstance(kid, str) and kid:
            keys = [(k, key) for k, key in keys if k == kid]
        return [key for _, key in keys]

    def verify(self, token: str, now: float) -> JwtClaims:
        """The claims of a valid JWT; UNAUTHENTICATED with the reason otherwise."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _refused(Reason.MALFORMED_TOKEN, "the JWT's header does not decode") from None
        alg = header.get("alg")
        accepted = ", ".join(sorted(self.algorithms))
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise _refused(
                Reason.UNSUPPORTED_ALGORITHM,
                f"the JWT's algorithm is not accepted here (accepted: {accepted})",
            )
        claims = self._signed_claims(token, alg, header.get("kid"))
        self._check_times(claims, now)
        if claims.get("iss") != self.issuer:
            raise _refused(
                Reason.WRONG_ISSUER, f"the JWT's issuer is not the expected {self.issuer!r}"
            )
        aud = claims.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if self.audience not in audiences:
            raise _refused(
                Reason.WRONG_AUDIENCE,
                f"the JWT's audience does not name the expected {self.audience!r}",
            )
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub or len(sub) > MAX_SUBJECT:
            raise _refused(
                Reason.MALFORMED_TOKEN,
                f"the JWT needs a 'sub' claim of 1 to {MAX_SUBJECT} characters",
            )
        name = claims.get(self.name_claim)
        exp = _number(claims, "exp")
        assert exp is not None
        return JwtClaims(self.issuer, sub, name if isinstance(name, str) else "", exp)

    def _signed_claims(self, token: str, alg: str, kid: object) -> dict[str, Any]:
        """The payload once the signature verifies with one of the algorithm's keys."""
        options: Any = {
            "verify_signature": True,
            "verify_exp": False,
            "verify_nbf": False,
            "verify_iat": False,
            "verify_aud": False,
            "verify_iss": False,
            "verify_sub": False,
            "verify_jti": False,
        }
        for key in self._keys(alg, kid):
            try:
                claims: dict[str, Any] = jwt.decode(token, key, algorithms=[alg], options=options)
            except jwt.InvalidSignatureError:
                continue
            except jwt.PyJWTError:
                raise _refused(Reason.MALFORMED_TOKEN, "the JWT does not decode") from None
            if not isinstance(claims, dict):
                raise _refused(Reason.MALFORMED_TOKEN, "the JWT's payload is not an object")
            return claims
        raise _refused(
            Reason.INVALID_SIGNATURE, "the JWT's signature does not verify with this server's keys"
        )

    def _check_times(self, claims: Mapping[str, Any], now: float) -> None:
        exp = _number(claims, "exp")
        if exp is None:
            raise _refused(Reason.MALFORMED_TOKEN, "the JWT has no 'exp' claim")
        if now > exp + self.leeway_s:
            raise _refused(Reason.TOKEN_EXPIRED, "the JWT has expired: get a fresh one")
        for name in ("nbf", "iat"):
            at = _number(claims, name)
            if at is not None and at > now + self.leeway_s:
                raise _refused(
                    Reason.TOKEN_NOT_YET_VALID,
                    f"the JWT is not valid yet (its {name!r} is in the future)",
                )


def _jwks_keys(path: str) -> tuple[tuple[str, str, Any], ...]:
    """The RS256 and ES256 public keys of a JWKS file; ValueError naming what is wrong."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"jwt_jwks_file: cannot read a JSON document: {exc}") from None
    entries = doc.get("keys") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError("jwt_jwks_file: a JWKS document needs a non-empty 'keys' list")
    keys = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"jwt_jwks_file: key {i} is not an object")
        if "d" in entry:
            raise ValueError(f"jwt_jwks_file: key {i} is a private key: give public keys only")
        kty = entry.get("kty")
        alg = entry.get("alg") or {"RSA": "RS256", "EC": "ES256"}.get(str(kty), "")
        if ASYMMETRIC.get(alg) != kty or (kty == "EC" and entry.get("crv") != "P-256"):
            raise ValueError(
                f"jwt_jwks_file: key {i} is neither an RSA key for RS256 nor a P-256 EC key "
                "for ES256"
            )
        if entry.get("use", "sig") != "sig":
            raise ValueError(f"jwt_jwks_file: key {i} is not a signing key (use)")
        try:
            key = jwt.PyJWK(entry, alg).key
        except jwt.PyJWTError as exc:
            raise ValueError(f"jwt_jwks_file: key {i}: {exc}") from None
        keys.append((alg, str(entry.get("kid", "")), key))
    return tuple(keys)


def jwt_verifier(settings: Settings) -> JwtVerifier | None:
    """The JWT verifier the settings configure (None: JWTs are not accepted); ValueError
    naming the setting that is wrong."""
    secret = settings.jwt_secret.encode()
    if settings.jwt_secret_file:
        if secret:
            raise ValueError("give jwt_secret or jwt_secret_file, not both")
        try:
            secret = Path(settings.jwt_secret_file).read_bytes().strip()
        except OSError as exc:
            raise ValueError(f"jwt_secret_file: cannot read it: {exc.strerror}") from None
    keys = _jwks_keys(settings.jwt_jwks_file) if settings.jwt_jwks_file else ()
    if not secret and not keys:
        return None
    if secret and len(secret) < MIN_SECRET_BYTES:
        raise ValueError(f"the HS256 secret must be at least {MIN_SECRET_BYTES} bytes")
    if not settings.jwt_issuer or not settings.jwt_audience:
        raise ValueError("JWTs need jwt_issuer and jwt_audience (the values to expect)")
    if not 0 <= settings.jwt_leeway_s <= MAX_LEEWAY_S:
        raise ValueError(f"jwt_leeway_s must be from 0 to {MAX_LEEWAY_S:g} seconds")
    if not settings.jwt_name_claim:
        raise ValueError("jwt_name_claim must name a claim")
    return JwtVerifier(
        settings.jwt_issuer,
        settings.jwt_audience,
        settings.jwt_leeway_s,
        settings.jwt_name_claim,
        secret,
        keys,
    )


def default_name(issuer: str, subject: str) -> str:
    """The name of a JWT's player whose token names none: "Player" and 4 hex digits."""
    return f"{DEFAULT_NAME} {hashlib.sha256(f'{issuer} {subject}'.encode()).hexdigest()[:4]}"


class Identity:
    """Players behind credentials, over one player store (see the module's docstring)."""

    def __init__(
        self,
        players: PlayerStore,
        verifier: JwtVerifier | None,
        clock: Callable[[], float],
        *,
        check_name: Callable[[str], str] | None = None,
    ) -> None:
        """``clock``: the server's time, read at each call; ``check_name``: a display name's
        validation (the name as shown, or a ServiceError); a JWT whose name fails it gets
        :func:`default_name`."""
        self.players = players
        self.verifier = verifier
        self.clock = clock
        self._check_name = check_name
        self._cache: collections.OrderedDict[str, tuple[Player, float]] = collections.OrderedDict()

    async def create_guest(self, name: str) -> tuple[Player, str]:
        """A new guest player and its player token (only the token's hash is stored)."""
        token, token_hash = new_token()  # 192 random bits: no two alike
        player = await self.players.create_guest(name, token_hash)
        log.info("player_created", player_id=player.player_id)
        return player, token

    async def player(self, token: str | None) -> Player:
        """The player of a credential: TOKEN_REQUIRED without one, UNKNOWN_PLAYER for a token
        that is no player token, a JWT's reason for a JWT that does not verify."""
        if token is None:
            raise _refused(
                Reason.TOKEN_REQUIRED,
                "this call needs a player credential (a player token from CreatePlayer, or a "
                "JWT) as 'authorization: Bearer <credential>' metadata",
            )
        found = await self._resolve(token)
        if found is None:
            raise _refused(
                Reason.UNKNOWN_PLAYER,
                "the bearer token is not a player credential of this server (a seat token? "
                "CreatePlayer returns a player token)",
            )
        return found

    async def optional_player(self, token: str | None) -> Player | None:
        """The caller's player when it sent a credential (as :meth:`player`), else None."""
        return None if token is None else await self.player(token)

    async def binding(self, token: str | None) -> Player | None:
        """The player a seat taken with ``token`` is bound to (JoinTable, CreateTable): its
        player for a player credential, None for no token or a token that is no player
        credential (a seat token of another table). A JWT that does not verify is refused."""
        if token is None:
            return None
        return await self._resolve(token)

    async def seat_player(self, rec: TableRecord, token: str | None) -> str:
        """The player id by which ``token`` may open a seat of ``rec``, asked only once it
        opened none by its hash (:func:`~service.tables.access.check_opening`): '' when no
        seat of the table is held by a bound player (no store round trip) or when it is no
        player credential (then the table's own checks refuse it as before). A JWT that does
        not verify is refused."""
        if token is None or not any(held_by_player(s) for s in rec.seats):
            return ""
        found = await self._resolve(token)
        return found.player_id if found is not None else ""

    async def _resolve(self, token: str) -> Player | None:
        now = self.clock()
        key = hash_token(token)
        hit = self._cache.get(key)
        if hit is not None:
            player, until = hit
            if now <= until:
                self._cache.move_to_end(key)
                return player
            del self._cache[key]
        found: Player | None
        if looks_like_jwt(token):
            found, until = await self._jwt_player(token, now)
        else:
            found, until = await self.players.by_token_hash(key), math.inf
        if found is not None:
            self._cache[key] = (found, until)
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return found

    async def _jwt_player(self, token: str, now: float) -> tuple[Player, float]:
        if self.verifier is None:
            raise _refused(
                Reason.MALFORMED_TOKEN,
                "this server accepts no JWTs (send a player token from CreatePlayer)",
            )
        claims = self.verifier.verify(token, now)
        name = self._name(claims)
        player = await self.players.by_subject(claims.issuer, claims.subject, name)
        return player, claims.expires_at + self.verifier.leeway_s

    def _name(self, claims: JwtClaims) -> str:
        if claims.name and self._check_name is not None:
            try:
                return self._check_name(claims.name)
            except ServiceError:
                pass
        return default_name(claims.issuer, claims.subject)
