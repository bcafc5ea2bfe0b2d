"""A small local OAuth 2 authorization server for development and tests: a JWKS endpoint and a
client-credentials token endpoint issuing RS256 JWTs.

Invariants:
- Serves on 127.0.0.1 only (a free port), plain HTTP, in a daemon thread: ``GET /jwks`` (the
  public key, what the broker's ``sasl.oauthbearer.jwks.endpoint.url`` reads) and ``POST /token``
  (``grant_type=client_credentials``; the client id and secret by HTTP Basic or in the form).
- Tokens are JWTs signed RS256 by a key made at start (``cryptography``): ``sub`` is the client's
  Kafka user, ``iss``/``aud`` are ``ISSUER``/``AUDIENCE``, ``exp`` is ``lifetime_s`` after issue.
  A wrong or unknown client gets HTTP 401 and no token.
- ``issued(client_id)`` counts the tokens issued to a client (tests prove refreshes with it).
- Secrets are never logged (the request log is off).
"""
from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from kafka_eos.secrets import Secret

ISSUER = "kafka-eos-dev-oauth"
AUDIENCE = "kafka"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64_int(value: int) -> str:
    return _b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


@dataclass(frozen=True)
class OAuthClient:
    """A client of the server: its id, secret and the Kafka user its tokens name (``sub``)."""
    client_id: str
    secret: Secret
    user: str


@dataclass
class OAuthServer:
    """Start with ``start()`` (or as a context manager); ``jwks_url`` and ``token_url`` once started."""
    clients: tuple[OAuthClient, ...]
    lifetime_s: float = 3600.0
    _key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048), repr=False)
    _kid: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    _issued: dict[str, int] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start the OAuth server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    def issued(self, client_id: str) -> int:
        return self._issued.get(client_id, 0)

    def jwks(self) -> dict:
        numbers = self._key.public_key().public_numbers()
        return {"keys": [{"kty": "RSA", "kid": self._kid, "use": "sig", "alg": "RS256",
                          "n": _b64_int(numbers.n), "e": _b64_int(numbers.e)}]}

    def sign(self, claims: dict) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": self._kid}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64(signature)}"

    def issue(self, client_id: str, secret: str, scope: str | None = None) -> str | None:
        """A token for this client, or None if the id or the secret is wrong."""
        client = next((c for c in self.clients if c.client_id == client_id), None)
        if client is None or client.secret.reveal() != secret:
            return None
        now = int(time.time())
        claims = {"sub": client.user, "iss": ISSUER, "aud": AUDIENCE, "iat": now,
                  "exp": now + int(self.lifetime_s), "jti": uuid.uuid4().hex, "scope": scope or "kafka"}
        self._issued[client_id] = self.issued(client_id) + 1
        return self.sign(claims)

    def start(self) -> "OAuthServer":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._server.serve_forever, name="dev-oauth", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "OAuthServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _credentials(headers, form: dict[str, str]) -> tuple[str, str]:
    auth = headers.get("Authorization", "")
    if auth.startswith("Basic "):
        client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        return urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
    return form.get("client_id", ""), form.get("client_secret", "")


def _handler(server: OAuthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # no request log (Basic credentials)
            pass

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/jwks":
                self._answer(200, server.jwks())
            else:
                self._answer(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            if self.path != "/token" or form.get("grant_type") != "client_credentials":
                self._answer(400, {"error": "unsupported_grant_type"})
                return
            token = server.issue(*_credentials(self.headers, form), form.get("scope"))
            if token is None:
                self._answer(401, {"error": "invalid_client"})
            else:
                self._answer(200, {"access_token": token, "token_type": "Bearer",
                                   "expires_in": int(server.lifetime_s)})
    return Handler
