"""JWTs for tests: an HS256 secret, RSA and P-256 keys with their JWKS file, and tokens signed
(or not) as a frontend's login, or an attacker, would make them."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from service.config import Settings

SECRET = "test-secret-" + "0123456789abcdef" * 4
ISSUER = "https://login.example"
AUDIENCE = "tute"


@dataclasses.dataclass(frozen=True)
class Keys:
    """An RSA and an EC signing key (private, for the tests' "login") and the JWKS file of
    their public halves, with kids "rsa-1" and "ec-1"."""

    rsa: rsa.RSAPrivateKey
    ec: ec.EllipticCurvePrivateKey
    jwks_path: Path


def make_keys(directory: Path) -> Keys:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    entries = []
    for kid, alg, key in (("rsa-1", "RS256", rsa_key), ("ec-1", "ES256", ec_key)):
        algorithm: Any = jwt.get_algorithm_by_name(alg)
        entry = json.loads(algorithm.to_jwk(key.public_key()))
        entry.update(kid=kid, alg=alg, use="sig")
        entries.append(entry)
    path = directory / "jwks.json"
    path.write_text(json.dumps({"keys": entries}))
    return Keys(rsa_key, ec_key, path)


def jwt_settings(base: Settings, keys: Keys | None = None, **more: Any) -> Settings:
    """``base`` accepting HS256 with :data:`SECRET` (and RS256/ES256 with ``keys``)."""
    return dataclasses.replace(
        base,
        jwt_secret=SECRET,
        jwt_jwks_file=str(keys.jwks_path) if keys is not None else "",
        jwt_issuer=ISSUER,
        jwt_audience=AUDIENCE,
        **more,
    )


def claims(now: float, sub: str | None = "user-1", **more: Any) -> dict[str, Any]:
    """Valid claims at ``now``: the expected issuer and audience, an hour to live."""
    out: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "iat": int(now),
        "exp": int(now) + 3600,
    }
    out.update(more)
    return {k: v for k, v in out.items() if v is not None}


def signed(payload: dict[str, Any], alg: str = "HS256", key: Any = SECRET, **headers: Any) -> str:
    return jwt.encode(payload, key, algorithm=alg, headers=headers or None)


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def unsigned(payload: dict[str, Any]) -> str:
    """A JWT with ``alg: none`` and no signature."""
    return f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(payload)}."
