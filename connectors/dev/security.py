"""SASL_SSL (SCRAM-SHA-512, and OAUTHBEARER on request) for the local broker: users, listener settings, ACLs.

Invariants:
- Clients connect to one SASL_SSL listener; brokers talk to each other over that same
  listener as the ``admin`` user. The controller listener stays PLAINTEXT on 127.0.0.1, and its
  principal (``User:ANONYMOUS``) is a super user, as KRaft needs for broker registration; it
  serves only the controller quorum's requests.
- ACLs are enforced (``StandardAuthorizer``, ``allow.everyone.if.no.acl.found=false``); super
  users are ``admin`` and the controller principal; every other user needs ACLs
  (``grant_pipeline`` gives a pipeline's).
- Passwords come from ``KAFKA_EOS_DEV_<USER>_PASSWORD`` when set, else are generated; they are
  held as ``Secret`` and written only to owner-only (0600) files.
- OAUTHBEARER (``oauth_listener``, ``oauth_jvm``): the same SASL_SSL listener also takes JWTs,
  checked by Kafka's ``OAuthBearerValidatorCallbackHandler`` against a JWKS endpoint (signature,
  ``exp``, issuer and audience of ``connectors/dev/oauth_server``); the token's ``sub`` is the
  principal, so ACLs are the SCRAM user's of that name. With ``reauth_ms`` the broker closes an
  OAuth session at its token's expiry unless the client re-authenticates (KIP-368).
- ``client_auth="required"`` (default ``"none"``): the listener asks every client, brokers included,
  for a certificate signed by the cluster's CA (``listener.name.sasl_ssl.ssl.client.auth=required``:
  a SASL_SSL listener ignores the unprefixed ``ssl.client.auth``; the CA PEM is its truststore); a
  client without one fails the TLS handshake, before SASL. The principal stays the SASL user. The
  dev clients (``client_conf``) then present the generated ``client.p12``, and the CA's keystore
  (``tls.ca_keystore``) is kept so a client's own certificate request can be signed.
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from kafka_eos.connectors.dev.local_kafka import ADMIN, ETL
from kafka_eos.connectors.dev.oauth_server import AUDIENCE, ISSUER
from kafka_eos.connectors.dev.tls import TlsFiles, generate, write_private
from kafka_eos.secrets import Secret

MECHANISM = "SCRAM-SHA-512"
LISTENER = "SASL_SSL"
OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
OAUTH_ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"  # Kafka 4: JVM property, URLs it may fetch
CLIENT_AUTH_MODES = ("none", "required")  # the listener's ssl.client.auth


def oauth_listener(jwks_url: str, reauth_ms: int = 0) -> tuple[tuple[str, str], ...]:
    """server.properties entries (``ClusterSettings.extra``) adding OAUTHBEARER beside SCRAM-SHA-512."""
    prefix = f"listener.name.{LISTENER.lower()}.oauthbearer"
    return (("sasl.enabled.mechanisms", f"{MECHANISM},OAUTHBEARER"),
            (f"{prefix}.sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                           "required;"),
            (f"{prefix}.sasl.server.callback.handler.class", OAUTH_VALIDATOR),
            (f"{prefix}.connections.max.reauth.ms", str(reauth_ms)),
            ("sasl.oauthbearer.jwks.endpoint.url", jwks_url),
            ("sasl.oauthbearer.expected.audience", AUDIENCE),
            ("sasl.oauthbearer.expected.issuer", ISSUER),
            ("sasl.oauthbearer.clock.skew.seconds", "2"))  # an expired token is refused at once (default 30 s)


def oauth_jvm(*urls: str) -> tuple[tuple[str, str], ...]:
    """``ClusterSettings.jvm_properties`` letting the broker fetch ``urls`` (the JWKS endpoint)."""
    return ((OAUTH_ALLOWED_URLS, ",".join(urls)),)


def oauth_client_conf(ca_file: str, token_url: str, client_id: str, secret: str) -> dict[str, str]:
    """librdkafka settings (no bootstrap) of an OIDC client-credentials client of the SASL_SSL listener."""
    return {"security.protocol": "SASL_SSL", "ssl.ca.location": ca_file, "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": client_id,
            "sasl.oauthbearer.client.secret": secret, "sasl.oauthbearer.token.endpoint.url": token_url}


def password_for(user: str) -> Secret:
    """``$KAFKA_EOS_DEV_<USER>_PASSWORD`` if set, else a new random password."""
    given = os.environ.get(f"KAFKA_EOS_DEV_{user.upper()}_PASSWORD")
    return Secret(given or secrets.token_urlsafe(24))


@dataclass(frozen=True)
class ClusterSecurity:
    """The TLS files and SCRAM users of one secured cluster."""
    directory: Path
    tls: TlsFiles
    users: tuple[tuple[str, Secret], ...]
    client_auth: str = "none"

    @classmethod
    def create(cls, directory: Path, passwords: tuple[tuple[str, str], ...] = (),
               client_auth: str = "none") -> "ClusterSecurity":
        if client_auth not in CLIENT_AUTH_MODES:
            raise ValueError(f"client_auth={client_auth!r}: use one of {', '.join(CLIENT_AUTH_MODES)}")
        given = dict(passwords)
        users = tuple((u, Secret(given[u]) if u in given else password_for(u)) for u in (ADMIN, ETL))
        tls = generate(directory / "tls", secrets.token_urlsafe(24), signing=client_auth == "required")
        return cls(directory, tls, users, client_auth)

    def password(self, user: str) -> Secret:
        return dict(self.users)[user]

    def client_conf(self, user: str = ETL) -> dict[str, str]:
        """librdkafka settings (no bootstrap) of a client logging in as ``user``; with client
        certificates required, the generated client keystore too."""
        conf = {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM, "sasl.username": user,
                "sasl.password": self.password(user).reveal(), "ssl.ca.location": str(self.tls.ca_file)}
        if self.client_auth == "required":
            conf.update({"ssl.keystore.location": str(self.tls.client_keystore),
                         "ssl.keystore.password": self.tls.keystore_password})
        return conf

    def client_file(self, user: str) -> Path:
        """Owner-only (0600) properties file with ``user``'s client settings, password included."""
        return self.directory / f"{user}.properties"

    def write_client_files(self, bootstrap: str) -> None:
        """Each user's ``client_file``: bootstrap.servers and its client settings."""
        for user, _ in self.users:
            conf = {"bootstrap.servers": bootstrap, **self.client_conf(user)}
            write_private(self.client_file(user), "".join(f"{k}={v}\n" for k, v in conf.items()).encode())

    def redacted_conf(self, user: str = ETL) -> dict[str, str]:
        conf = {**self.client_conf(user), "sasl.password": "***"}
        return {**conf, "ssl.keystore.password": "***"} if "ssl.keystore.password" in conf else conf

    def scram_arguments(self) -> list[str]:
        """``kafka-storage format`` arguments that create every user's SCRAM credential."""
        out = []
        for user, password in self.users:
            out += ["--add-scram", f"{MECHANISM}=[name={user},password={password.reveal()}]"]
        return out

    def broker_properties(self, port: int, controller_port: int) -> dict[str, object]:
        """server.properties entries for a node with a SASL_SSL listener on ``port``."""
        admin = self.password(ADMIN).reveal()
        jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                f'username="{ADMIN}" password="{admin}";')
        prefix = f"listener.name.{LISTENER.lower()}.{MECHANISM.lower()}"
        return {
            "listeners": f"{LISTENER}://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"{LISTENER}://127.0.0.1:{port}",
            "listener.security.protocol.map": f"{LISTENER}:SASL_SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": LISTENER,
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"{prefix}.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": self.tls.keystore,
            "ssl.keystore.password": self.tls.keystore_password,
            "ssl.key.password": self.tls.keystore_password,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.tls.ca_file,
            "ssl.endpoint.identification.algorithm": "https",
            "ssl.client.auth": self.client_auth,
            # KIP-684: a SASL_SSL listener ignores the broker-wide setting; only the listener's own applies
            f"listener.name.{LISTENER.lower()}.ssl.client.auth": self.client_auth,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": f"User:{ADMIN};User:ANONYMOUS",
        }
