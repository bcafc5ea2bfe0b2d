"""OAuth tokens for the control plane: the client-credentials grant (what librdkafka's
``sasl.oauthbearer.method=oidc`` does) and a user's callback, cached until 80 % of their lifetime;
errors name the endpoint and the setting, never the secret. Fakes for HTTP and the clock."""
from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.parse

import pytest

from kafka_eos import client_factory
from kafka_eos.oauth_tokens import (CALLBACK_KEY, CallbackTokens, ClientCredentialsTokens, OAuthTokenError,
                                    oauth_provider, parse_extensions, token_problem)
from kafka_eos.secrets import Secret

OIDC = {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "etl-app",
        "sasl.oauthbearer.client.secret": "cs-Secret-1", "sasl.oauthbearer.token.endpoint.url": "http://idp/token"}
issued_tokens: list[str] = []


def jwt(exp: float) -> str:
    part = base64.urlsafe_b64encode(json.dumps({"sub": "etl", "exp": exp}).encode()).decode().rstrip("=")
    return f"e30.{part}.sig"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Endpoint:
    """A token endpoint: records each request, answers a JWT living ``lifetime`` s (or an HTTP error)."""

    def __init__(self, clock: Clock, lifetime: float = 100.0, status: int = 200) -> None:
        self.clock, self.lifetime, self.status, self.requests = clock, lifetime, status, []

    def __call__(self, url, body, headers, timeout_s):
        self.requests.append((url, urllib.parse.parse_qs(body.decode()), dict(headers)))
        if self.status != 200:
            raise urllib.error.HTTPError(url, self.status, "Unauthorized", {}, io.BytesIO(b"{}"))
        return json.dumps({"access_token": jwt(self.clock() + self.lifetime), "expires_in": 9999}).encode()


def provider(clock: Clock, endpoint: Endpoint, scope: str | None = "kafka") -> ClientCredentialsTokens:
    return ClientCredentialsTokens("http://idp/token", "etl-app", Secret("cs-Secret-1"), scope,
                                   post=endpoint, clock=clock)


def test_the_grant_sends_basic_credentials_and_the_scope():
    clock = Clock()
    endpoint = Endpoint(clock)
    token = provider(clock, endpoint).token()
    url, form, headers = endpoint.requests[0]
    assert url == "http://idp/token" and form == {"grant_type": ["client_credentials"], "scope": ["kafka"]}
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"etl-app:cs-Secret-1").decode()
    assert token.count(".") == 2


def test_a_token_is_reused_until_80_percent_of_its_jwt_lifetime_then_refreshed():
    clock = Clock()
    endpoint = Endpoint(clock, lifetime=100.0)
    tokens = provider(clock, endpoint)
    first = tokens.token()
    clock.now += 79.0
    assert tokens.token() == first and len(endpoint.requests) == 1
    clock.now += 1.0
    assert tokens.token() != first and len(endpoint.requests) == 2  # exp wins over expires_in


def test_a_refused_client_names_the_endpoint_the_client_and_the_settings_never_the_secret():
    clock = Clock()
    with pytest.raises(OAuthTokenError) as refused:
        provider(clock, Endpoint(clock, status=401)).token()
    text = str(refused.value)
    assert "OAuth authentication failed" in text and "http://idp/token" in text and "'etl-app'" in text
    assert "HTTP 401" in text and "sasl.oauthbearer.client.secret" in text and "cs-Secret-1" not in text


def test_an_unreachable_endpoint_names_the_endpoint_setting():
    def down(*args):
        raise ConnectionRefusedError(111, "refused")
    with pytest.raises(OAuthTokenError, match="check sasl.oauthbearer.token.endpoint.url"):
        ClientCredentialsTokens("http://idp/token", "etl-app", Secret("s"), post=down).token()


def test_the_oidc_settings_build_a_client_credentials_provider_with_extensions():
    tokens = oauth_provider({**OIDC, "sasl.oauthbearer.scope": "kafka",
                             "sasl.oauthbearer.extensions": "logicalCluster=lkc-1, identityPoolId=pool-2"})
    assert isinstance(tokens, ClientCredentialsTokens)
    assert (tokens.endpoint, tokens.client_id, tokens.scope) == ("http://idp/token", "etl-app", "kafka")
    assert tokens.extensions() == {"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}
    assert "cs-Secret-1" not in repr(vars(tokens))


@pytest.mark.parametrize("change, message", [
    ({"sasl.oauthbearer.client.secret": ""}, "needs sasl.oauthbearer.client.secret"),
    ({"sasl.oauthbearer.method": "default"}, "needs a token source"),
    ({"sasl.oauthbearer.method": "azure"}, "use oidc or default"),
    ({CALLBACK_KEY: "tests.test_oauth_tokens:issue"}, "both set"),
    ({"sasl.oauthbearer.extensions": "novalue"}, "is not key=value"),
])
def test_incomplete_or_ambiguous_oauth_settings_are_refused(change, message):
    with pytest.raises(OAuthTokenError, match=message):
        oauth_provider({**OIDC, **change})


def issue(config: str) -> tuple[str, float]:
    """A callback with confluent-kafka's oauth_cb contract."""
    issued_tokens.append(config)
    return f"token-{len(issued_tokens)}", 1100.0


def test_the_callback_is_called_with_the_config_string_and_cached():
    clock = Clock()
    issued_tokens.clear()
    tokens = CallbackTokens("tests.test_oauth_tokens:issue", "region=eu-west-1", clock=clock)
    assert tokens.token() == tokens.token() == "token-1" and issued_tokens == ["region=eu-west-1"]
    clock.now = 1081.0  # past 80 % of the 100 s it had
    assert tokens.token() == "token-2"


@pytest.mark.parametrize("spec, message", [("tests.test_oauth_tokens:nope", "cannot be imported"),
                                           ("no_such_module_x:f", "cannot be imported"),
                                           ("tests.test_oauth_tokens", "use module:function")])
def test_a_callback_that_cannot_be_loaded_is_named(spec, message):
    with pytest.raises(OAuthTokenError, match=message):
        oauth_provider({"sasl.mechanism": "OAUTHBEARER", CALLBACK_KEY: spec})


def broken(config: str) -> tuple[str, float]:
    raise RuntimeError("signer down: secret=abc")


def test_a_failing_callback_is_named_without_its_message():
    with pytest.raises(OAuthTokenError) as failed:
        CallbackTokens("tests.test_oauth_tokens:broken").token()
    assert "raised RuntimeError" in str(failed.value) and "abc" not in str(failed.value)


def test_librdkafka_clients_get_the_callback_as_oauth_cb():
    conf = client_factory.with_noise({"bootstrap.servers": "b:1", CALLBACK_KEY: "tests.test_oauth_tokens:issue"},
                                     client_factory.Noise.SILENT)
    assert conf == {"bootstrap.servers": "b:1", "oauth_cb": issue, "log_level": 0}


def test_token_problem_asks_only_oauthbearer_settings():
    assert token_problem({"sasl.mechanism": "SCRAM-SHA-512"}) is None
    problem = token_problem({**OIDC, "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:9/token"})
    assert isinstance(problem, OAuthTokenError) and "127.0.0.1:9" in str(problem)


def test_extensions_parse():
    assert parse_extensions(None) == {} and parse_extensions("a=1,b=x=y") == {"a": "1", "b": "x=y"}
