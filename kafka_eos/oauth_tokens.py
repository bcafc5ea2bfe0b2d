"""OAuth bearer tokens for the driver's control-plane client (kafka-python's ``sasl_oauth_token_provider``).

Two providers, one per way librdkafka gets a token:

- ``ClientCredentialsTokens``: ``sasl.oauthbearer.method=oidc`` — the OAuth 2 client-credentials
  grant against ``sasl.oauthbearer.token.endpoint.url`` (HTTP Basic with the client id and
  secret, ``scope`` if set), what librdkafka does on the executors.
- ``CallbackTokens``: ``kafka_eos.oauthbearer.callback=module:function`` — a user's function with
  confluent-kafka's ``oauth_cb`` contract (``sasl.oauthbearer.config`` string -> ``(token,
  expiry epoch seconds)``, e.g. AWS MSK IAM's signer), the same function librdkafka calls.

Invariants:
- A token is fetched on first use and reused until ``REFRESH_AT`` (80 %, librdkafka's ratio) of
  its lifetime has passed, then fetched again; a token is never served past its expiry.
- The client secret is a ``Secret`` and never appears in an error or a log line; errors name the
  endpoint, the client id and the setting to fix.
"""
from __future__ import annotations

import base64
import importlib
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Mapping

from kafka_eos import KafkaEosError
from kafka_eos.secrets import Secret

REFRESH_AT = 0.8
CALLBACK_KEY = "kafka_eos.oauthbearer.callback"
_OIDC = {"client_id": "sasl.oauthbearer.client.id", "client_secret": "sasl.oauthbearer.client.secret",
         "endpoint": "sasl.oauthbearer.token.endpoint.url"}
# What the control plane reads of librdkafka's OAUTHBEARER settings (any other is refused).
OAUTH_KEYS = frozenset({*_OIDC.values(), "sasl.oauthbearer.method", "sasl.oauthbearer.scope",
                        "sasl.oauthbearer.extensions", "sasl.oauthbearer.config", "https.ca.location", CALLBACK_KEY})
Post = Callable[[str, bytes, Mapping[str, str], float], bytes]
Clock = Callable[[], float]


class OAuthTokenError(KafkaEosError):
    """No token could be had; names the endpoint (or callback) and the setting to fix, never a secret."""


def https_post(ca_location: str | None = None) -> Post:
    """POST with urllib; HTTPS verified against ``ca_location`` (librdkafka's ``https.ca.location``)
    or the system's CAs."""
    context = ssl.create_default_context(cafile=ca_location) if ca_location else None

    def post(url: str, body: bytes, headers: Mapping[str, str], timeout_s: float) -> bytes:
        request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:  # noqa: S310
            return response.read()
    return post


def _jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (None if ``token`` is not one)."""
    try:
        payload = token.split(".")[1]
        return float(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def parse_extensions(text: str | None) -> dict[str, str]:
    """``sasl.oauthbearer.extensions`` (``k1=v1,k2=v2``) as a mapping."""
    pairs = [p.split("=", 1) for p in (text or "").split(",") if p.strip()]
    if any(len(p) != 2 for p in pairs):
        raise OAuthTokenError(f"sasl.oauthbearer.extensions={text!r} is not key=value[,key=value]: fix its form")
    return {k.strip(): v.strip() for k, v in pairs}


class _CachedTokens:
    """A token reused until ``REFRESH_AT`` of its lifetime, then fetched again (thread-safe)."""

    def __init__(self, extensions: Mapping[str, str] | None = None, clock: Clock = time.time) -> None:
        self._extensions = dict(extensions or {})
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_after = 0.0

    def token(self) -> str:
        with self._lock:
            now = self._clock()
            if self._token is None or now >= self._refresh_after:
                token, expiry = self._fetch()
                self._token, self._refresh_after = token, now + REFRESH_AT * max(0.0, expiry - now)
            return self._token

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)

    def _fetch(self) -> tuple[str, float]:
        raise NotImplementedError


class ClientCredentialsTokens(_CachedTokens):
    """The client-credentials grant of ``sasl.oauthbearer.method=oidc``."""

    def __init__(self, endpoint: str, client_id: str, client_secret: Secret, scope: str | None = None,
                 extensions: Mapping[str, str] | None = None, timeout_s: float = 10.0,
                 post: Post | None = None, clock: Clock = time.time) -> None:
        super().__init__(extensions, clock)
        self.endpoint, self.client_id, self.scope = endpoint, client_id, scope
        self._secret, self._timeout_s, self._post_fn = client_secret, timeout_s, post or https_post()

    def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}
        basic = base64.b64encode(f"{self.client_id}:{self._secret.reveal()}".encode()).decode()
        headers = {"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded",
                   "Accept": "application/json"}
        try:
            answer = json.loads(self._post_fn(self.endpoint, urllib.parse.urlencode(form).encode(), headers,
                                              self._timeout_s))
            token = str(answer["access_token"])
        except urllib.error.HTTPError as exc:
            fix = ("check sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
                   if exc.code in (400, 401, 403) else "check sasl.oauthbearer.token.endpoint.url")
            raise OAuthTokenError(f"OAuth authentication failed: the token endpoint {self.endpoint} refused client "
                                  f"{self.client_id!r} (HTTP {exc.code}): {fix}") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OAuthTokenError(f"no OAuth token from {self.endpoint} for client {self.client_id!r} "
                                  f"({type(exc).__name__}): check sasl.oauthbearer.token.endpoint.url") from None
        expiry = _jwt_expiry(token)
        if expiry is None and "expires_in" in answer:
            expiry = self._clock() + float(answer["expires_in"])
        if expiry is None:
            raise OAuthTokenError(f"the token from {self.endpoint} has no expiry (no JWT exp, no expires_in): "
                                  "use a token endpoint that issues JWTs")
        return token, expiry


def load_callback(spec: str) -> Callable[[str], tuple]:
    """The function named by ``module:function`` (the ``kafka_eos.oauthbearer.callback`` setting)."""
    module, _, name = spec.partition(":")
    try:
        function = getattr(importlib.import_module(module), name) if module and name else None
    except (ImportError, AttributeError) as exc:
        raise OAuthTokenError(f"{CALLBACK_KEY}={spec!r} cannot be imported ({exc}): make the module importable "
                              "on the driver and the executors") from None
    if not callable(function):
        raise OAuthTokenError(f"{CALLBACK_KEY}={spec!r}: use module:function naming a function")
    return function


class CallbackTokens(_CachedTokens):
    """Tokens from a user's ``oauth_cb``-style function: ``config -> (token, expiry epoch s[, ...])``."""

    def __init__(self, spec: str, config: str = "", extensions: Mapping[str, str] | None = None,
                 clock: Clock = time.time) -> None:
        super().__init__(extensions, clock)
        self.spec, self._config, self._function = spec, config, load_callback(spec)

    def _fetch(self) -> tuple[str, float]:
        try:
            answer = self._function(self._config)
            return str(answer[0]), float(answer[1])
        except OAuthTokenError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's function: name it and what it raised
            raise OAuthTokenError(f"OAuth authentication failed: {CALLBACK_KEY}={self.spec!r} raised "
                                  f"{type(exc).__name__}: it must return (token, expiry epoch seconds)") from None


def _register_with_kafka_python() -> None:
    """kafka-python takes a token provider that is one of its ``AbstractTokenProvider``s; registered
    here, on the control plane's first use, so a process without it (a task) never imports it."""
    from kafka.net.sasl.oauth import AbstractTokenProvider
    AbstractTokenProvider.register(_CachedTokens)


def oauth_provider(conf: Mapping[str, str]) -> _CachedTokens:
    """The control plane's token provider for librdkafka's OAUTHBEARER settings ``conf``:
    ``sasl.oauthbearer.method=oidc`` -> client credentials; else ``kafka_eos.oauthbearer.callback``."""
    _register_with_kafka_python()
    method = conf.get("sasl.oauthbearer.method", "default").strip().lower()
    extensions = parse_extensions(conf.get("sasl.oauthbearer.extensions"))
    if method == "oidc":
        if CALLBACK_KEY in conf:
            raise OAuthTokenError(f"{CALLBACK_KEY} and sasl.oauthbearer.method=oidc are both set: keep one")
        missing = [key for key in _OIDC.values() if not conf.get(key)]
        if missing:
            raise OAuthTokenError(f"sasl.oauthbearer.method=oidc needs {', '.join(missing)}: set them")
        return ClientCredentialsTokens(conf[_OIDC["endpoint"]], conf[_OIDC["client_id"]],
                                       Secret(conf[_OIDC["client_secret"]]), conf.get("sasl.oauthbearer.scope"),
                                       extensions, post=https_post(conf.get("https.ca.location")))
    if method != "default":
        raise OAuthTokenError(f"sasl.oauthbearer.method={method!r}: use oidc or default")
    if CALLBACK_KEY not in conf:
        raise OAuthTokenError("sasl.mechanism=OAUTHBEARER needs a token source: set sasl.oauthbearer.method=oidc "
                              f"(client id, secret, token endpoint) or {CALLBACK_KEY}=module:function "
                              "(librdkafka's unsecured test tokens are not carried)")
    return CallbackTokens(conf[CALLBACK_KEY], conf.get("sasl.oauthbearer.config", ""), extensions)


def token_problem(conf: Mapping[str, str]) -> OAuthTokenError | None:
    """Why settings ``conf`` get no OAuth token (asks the token source once); None when they get
    one or do not use OAUTHBEARER. Explains a cluster that librdkafka only reports as unreachable."""
    mechanism = conf.get("sasl.mechanism", conf.get("sasl.mechanisms", ""))
    if str(mechanism).strip().upper() != "OAUTHBEARER":
        return None
    try:
        oauth_provider({k: str(v) for k, v in conf.items()}).token()
    except OAuthTokenError as exc:
        return exc
    return None
