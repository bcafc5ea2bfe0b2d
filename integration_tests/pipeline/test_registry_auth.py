"""Registry basic auth (``basic_auth_user_info``) against a registry that really checks it: the
credentials work, wrong ones are refused with a clear error, and no password is ever printed
(describe, errors, logs)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from integration_tests.pipeline_cli import EXAMPLES, kafka_eos
from integration_tests.registry_tools import cli_env

EXAMPLE = EXAMPLES / "payments-registry.yaml"


@pytest.fixture
def authenticated(schema_registry):
    if not schema_registry.user_info:
        pytest.skip(f"the {schema_registry.provider} registry needs no credentials (set SCHEMA_REGISTRY_AUTH)")
    user, password = schema_registry.user_info.split(":", 1)
    return schema_registry, user, password


def test_the_registry_refuses_requests_without_valid_credentials(authenticated):
    registry, user, password = authenticated
    for header in (None, f"{user}:wrong-{password}"):
        request = urllib.request.Request(registry.url + "/subjects")
        if header:
            import base64
            request.add_header("Authorization", "Basic " + base64.b64encode(header.encode()).decode())
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401


def test_describe_never_shows_the_credentials(authenticated, bootstrap, tmp_path):
    registry, user, password = authenticated
    in_url = registry.url.replace("http://", f"http://{user}:{password}@", 1)
    for env in (cli_env(registry), {**cli_env(registry), "SCHEMA_REGISTRY_URL": in_url}):
        for json_flag in ([], ["--json"]):
            result = kafka_eos(["describe", str(EXAMPLE), "--offline", *json_flag], bootstrap, tmp_path, env=env)
            assert result.code == 0, result.log()
            assert password not in result.stdout + result.stderr
            assert "registry http" in result.stdout or '"registry http' in result.stdout, result.stdout
    host = registry.url.split("://", 1)[1].split("/", 1)[0]
    assert f"***@{host}" in result.stdout, "credentials in the URL are masked, the host still shown"


def test_wrong_credentials_fail_the_run_with_a_redacted_error(authenticated, bootstrap, tmp_path):
    registry, user, password = authenticated
    wrong = f"{user}:{password}-wrong"
    result = kafka_eos(["run", str(EXAMPLE), "--once"], bootstrap, tmp_path,
                       env={**cli_env(registry), "SCHEMA_REGISTRY_AUTH": wrong})
    assert result.code != 0, result.log()
    assert "401" in result.stderr or "nauthorized" in result.stderr, result.log()
    assert password not in result.stdout + result.stderr, "neither the right nor the wrong password is printed"


def test_the_registry_log_holds_no_password(authenticated):
    registry, _, password = authenticated
    if registry.local is None:
        pytest.skip("only the local registry's log is at hand")
    assert registry.local.log.exists() and password not in registry.local.log.read_text(errors="replace")
    assert json.dumps(registry.local.properties()).count(password) == 1, "given to the registry, once"
