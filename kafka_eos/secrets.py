"""What is a secret and how it is hidden: the one owner of that rule for every layer.

Invariants:
- ``SECRET_MARKERS`` is the one list: a setting (librdkafka, Java client, schema registry, or its
  ``kafka.``-prefixed Spark option form) holds a secret when its name contains a marker, in any
  case. ``is_secret_key``, ``is_secret_env_var``, ``redacted``, ``KEY_VALUE`` (text) and
  ``spark_redaction_conf`` (Spark plans, UI, event logs) are all built from it.
- Keys are secret, certificates and principal names are not: ``sasl.username`` (ACL errors must
  name the principal), ``ssl.certificate.pem``, ``ssl.keystore.certificate.chain``, file
  locations (``PUBLIC_KEYS``) and the OAuth client id, scope, method and token endpoint URL
  (``PUBLIC_OAUTH_KEYS``) stay visible. Every name in ``KNOWN_SECRET_KEYS`` is secret.
- A public name may hold a marker (``sasl.oauthbearer.token.endpoint.url``: ``token``): the marker
  is not matched inside that name (a lookaround built from the public names, valid in Python and
  Java regexes), and is matched everywhere else (``x.token``, ``kafka.sasl.oauthbearer.config``).
- A ``Secret``'s repr/str/format is ``***``; only ``reveal()`` returns the value (pickling keeps it,
  so Spark closures carry it to executors).
"""
from __future__ import annotations

import re
from typing import Mapping, Union

MASK = "***"
SECRET_MARKERS: tuple[str, ...] = (
    "password", "passwd", "passphrase", "secret", "token", "credential", "private", "jaas",
    "sasl.oauthbearer.config", "ssl.key.pem", "ssl.keystore.key", "basic.auth", "user.info",
)
KNOWN_SECRET_KEYS: tuple[str, ...] = (
    "sasl.password", "sasl.jaas.config", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
    "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "ssl.key.pem",
    "ssl.keystore.key", "basic.auth.user.info", "schema.registry.basic.auth.user.info",
    "sasl.oauthbearer.assertion.private.key.pem", "sasl.oauthbearer.assertion.private.key.passphrase",
)
PUBLIC_KEYS: tuple[str, ...] = (
    "bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.username", "ssl.ca.location",
    "ssl.certificate.pem", "ssl.keystore.certificate.chain", "ssl.keystore.location", "ssl.key.location",
    "ssl.truststore.location", "ssl.endpoint.identification.algorithm", "client.id", "acks",
)
# OAUTHBEARER settings that are not secrets (librdkafka's CONFIGURATION.md, the Java client): ids,
# URLs, paths, choices. Spark's own ``url`` default (data source options) still hides the URLs in
# Spark's SQL plans; kafka-eos's rule shows them.
PUBLIC_OAUTH_KEYS: tuple[str, ...] = (
    "sasl.oauthbearer.method", "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.scope", "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.grant.type", "sasl.oauthbearer.assertion.private.key.file", "sasl.oauthbearer.assertion.file",
)
# Variable names carry no structure: any marker (``_`` read as ``.``), or the words KEY / AUTH.
_ENV_EXTRA = ("key", "auth")
# Spark's own defaults, kept when kafka-eos sets its redaction settings.
_SPARK_CONF_DEFAULT, _SPARK_OPTIONS_DEFAULT = "access[.]key", "url"


def _marker_pattern(marker: str) -> str:
    """``marker`` as a regex that does not match inside a public name holding it: before the
    marker, one ``(?!(?<=prefix)rest)`` per occurrence in a public name."""
    public = [(key[:at], key[at:]) for key in PUBLIC_KEYS + PUBLIC_OAUTH_KEYS
              for at in range(len(key)) if key.startswith(marker, at)]
    return "".join(f"(?!(?<={re.escape(before)}){re.escape(rest)})" for before, rest in public) + re.escape(marker)


_MARKER = "|".join(_marker_pattern(m) for m in SECRET_MARKERS)
SECRET_KEY = re.compile(_MARKER, re.I)
# ``key=value`` / ``key: value`` / ``"key": "value"`` pairs whose key holds a marker.
KEY_VALUE = re.compile(r"(?i)((?:" + _MARKER + r")[\w.-]*[\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;}\])]+)")


class Secret:
    """A secret string: ``***`` in repr/str/format; ``reveal()`` gives the value."""

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        object.__setattr__(self, "_value", str(value))

    def reveal(self) -> str:
        return self._value

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Secret is immutable")

    def __repr__(self) -> str:
        return MASK

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):  # pickles (Spark closures) keep the value; only text forms hide it
        return (Secret, (self._value,))


Value = Union[str, Secret]


def reveal(value: Value | None) -> str | None:
    return value.reveal() if isinstance(value, Secret) else value


def is_secret_key(key: str) -> bool:
    """Whether a client setting holds a secret (``sasl.password``, ``kafka.ssl.key.pem``, ...)."""
    return SECRET_KEY.search(key) is not None


def is_secret_env_var(name: str) -> bool:
    """Whether an environment variable's value is a secret (``KAFKA_PASSWORD``, ``SR_BASIC_AUTH``)."""
    dotted = name.lower().replace("_", ".")
    return is_secret_key(dotted) or any(word in dotted for word in _ENV_EXTRA)


def redacted(settings: Mapping[str, object]) -> dict[str, str]:
    """``settings`` as text, ``***`` for secret keys and ``Secret`` values."""
    return {str(k): MASK if isinstance(v, Secret) or is_secret_key(str(k)) else str(v) for k, v in settings.items()}


def redact_pairs(text: str) -> str:
    """``text`` with the value of every secret-looking ``key=value`` / ``key: value`` pair hidden."""
    return KEY_VALUE.sub(lambda m: m.group(1) + MASK, text)


def spark_redaction_regex() -> str:
    """A (Java) regex matching every secret setting name, e.g. ``kafka.sasl.jaas.config``."""
    return "(?i)" + _MARKER


def spark_redaction_conf() -> dict[str, str]:
    """Spark settings that hide secret settings in plans, the UI and event logs (Spark's defaults kept):
    ``spark.redaction.regex`` (Spark settings, and data source options) and
    ``spark.sql.redaction.options.regex`` (data source options)."""
    return {"spark.redaction.regex": f"{spark_redaction_regex()}|{_SPARK_CONF_DEFAULT}",
            "spark.sql.redaction.options.regex": f"{spark_redaction_regex()}|{_SPARK_OPTIONS_DEFAULT}"}
