"""A real ``jwt_authn`` in front of toolseal: an RS256 key made in the test, the filter YAML that
trusts it, and tokens signed with it. Envoy verifies the token and writes its payload into the
dynamic metadata namespace ``envoy.filters.http.jwt_authn`` (key ``payload``), where toolseal
reads caller identities (policy principals, snapshot keys)."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://issuer.toolseal.test"
PAYLOAD = "envoy.filters.http.jwt_authn/payload"


def signing_key() -> rsa.RSAPrivateKey:
    """A fresh RSA key: the JWKS Envoy trusts is made from it."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwt_filter(key: rsa.RSAPrivateKey, prefix: str = "/mcp") -> str:
    """``pre_filters`` YAML: jwt_authn on the routes under ``prefix`` (not the admin API,
    whose bearer token is not a JWT), tokens optional (a request without one passes
    unauthenticated, with no payload metadata)."""
    public_jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    public_jwk.update({"kid": "k1", "alg": "RS256", "use": "sig"})
    jwks = json.dumps({"keys": [public_jwk]})
    return f"""\
          - name: envoy.filters.http.jwt_authn
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication
              providers:
                demo:
                  issuer: {ISSUER}
                  local_jwks: {{ inline_string: {json.dumps(jwks)} }}
                  payload_in_metadata: payload
                  forward: true
              rules:
              - match: {{ prefix: "{prefix}" }}
                requires:
                  requires_any:
                    requirements:
                    - provider_name: demo
                    - allow_missing: {{}}
"""


def token(key: rsa.RSAPrivateKey, *, sub: str = "agent-7", groups: list[str] | None = None) -> str:
    """A token valid for ten minutes with that subject and groups."""
    now = int(time.time())
    claims: dict[str, Any] = {"iss": ISSUER, "sub": sub, "groups": groups or [], "iat": now,
                              "exp": now + 600}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
