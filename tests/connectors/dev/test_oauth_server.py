"""The dev OAuth server: RS256 JWTs that verify against its JWKS, 401 for a wrong secret."""
from __future__ import annotations

import base64
import json
import urllib.request

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from kafka_eos.connectors.dev.oauth_server import AUDIENCE, ISSUER, OAuthClient, OAuthServer
from kafka_eos.oauth_tokens import ClientCredentialsTokens, OAuthTokenError
from kafka_eos.secrets import Secret


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_tokens_verify_against_the_jwks_and_name_the_user():
    with OAuthServer((OAuthClient("etl-app", Secret("cs-1"), "etl"),), lifetime_s=60) as server:
        token = ClientCredentialsTokens(server.token_url, "etl-app", Secret("cs-1")).token()
        jwks = json.loads(urllib.request.urlopen(server.jwks_url).read())
        assert server.issued("etl-app") == 1
    header, payload, signature = token.split(".")
    key = jwks["keys"][0]
    public = rsa.RSAPublicNumbers(int.from_bytes(unb64(key["e"]), "big"), int.from_bytes(unb64(key["n"]), "big"))
    public.public_key().verify(unb64(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
    claims = json.loads(unb64(payload))
    assert json.loads(unb64(header))["kid"] == key["kid"]
    assert (claims["sub"], claims["iss"], claims["aud"], claims["exp"] - claims["iat"]) == ("etl", ISSUER, AUDIENCE, 60)


def test_a_wrong_secret_gets_401_and_no_token():
    with OAuthServer((OAuthClient("etl-app", Secret("cs-1"), "etl"),)) as server:
        try:
            ClientCredentialsTokens(server.token_url, "etl-app", Secret("wrong")).token()
            raise AssertionError("a token for a wrong secret")
        except OAuthTokenError as refused:
            assert "HTTP 401" in str(refused)
        assert server.issued("etl-app") == 0
