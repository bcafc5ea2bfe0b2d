"""librdkafka client settings -> kafka-python settings of the driver's control-plane client.

Invariants:
- Every security-related setting (a key containing ``sasl`` or ``ssl``, or starting with
  ``security.``) is either carried with the same meaning or refused with a
  ``ClientSettingsError`` naming the key and the fix; none is silently dropped.
- TLS is carried as one ``ssl.SSLContext`` built in memory (an inline ``ssl.ca.pem``, a truststore's
  certificates (``kafka_eos.truststores``) and a PKCS12 keystore's key (``kafka_eos.txn.cluster.keystores``)
  never touch the disk); hostname verification
  follows ``ssl.endpoint.identification.algorithm`` (librdkafka's default ``https``: on) and
  ``enable.ssl.certificate.verification``.
- SASL mechanisms carried: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (``oauth_provider``:
  the client-credentials grant of ``sasl.oauthbearer.method=oidc``, or the
  ``kafka_eos.oauthbearer.callback`` function). GSSAPI is refused (``_FIXES`` says why).
- Other settings are client tuning of the producers and consumers; the control plane ignores them.
- Error messages never contain a setting's value when the key holds a secret.
- One function decides whether a cluster's settings are usable: ``check_client_settings``. The
  live and offline ``validate`` (``config.rules.client_settings``), the sink's query start (step
  1, before any transaction) and the control plane (``kafka_python_settings``) all call it, so no
  setting is refused once a run has started.
"""
from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import Mapping

from kafka_eos import truststores
from kafka_eos.oauth_tokens import OAUTH_KEYS, OAuthTokenError, oauth_provider
from kafka_eos.secrets import is_secret_key
from kafka_eos.truststores import StoreProblem
from kafka_eos.txn.cluster import keystores
from kafka_eos.txn.protocol.errors import SinkConfigError

PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
MECHANISMS = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
CARRIED = {"bootstrap.servers", "client.id", "security.protocol", "sasl.mechanism", "sasl.mechanisms",
           "sasl.username", "sasl.password", "ssl.ca.location", "ssl.ca.pem", "ssl.crl.location",
           "ssl.endpoint.identification.algorithm", "enable.ssl.certificate.verification",
           "ssl.certificate.location", "ssl.key.location", "ssl.key.password", "ssl.cipher.suites"}
CARRIED |= OAUTH_KEYS
CARRIED |= keystores.KEYS  # a PKCS12 keystore: librdkafka reads it, the control plane loads it in memory
CARRIED |= truststores.KEYS  # a PKCS12/PEM truststore: ssl.ca.pem for librdkafka, cadata for the control plane
# Tuning of producers/consumers that does not change how the control plane connects or who it is.
IGNORED = {"linger.ms", "queue.buffering.max.ms", "batch.num.messages", "batch.size",
           "queue.buffering.max.messages", "queue.buffering.max.kbytes", "compression.type",
           "compression.codec", "compression.level", "partitioner", "message.max.bytes",
           "message.timeout.ms", "delivery.timeout.ms", "request.timeout.ms", "retries",
           "message.send.max.retries", "retry.backoff.ms", "retry.backoff.max.ms", "acks",
           "request.required.acks", "enable.idempotence", "max.in.flight.requests.per.connection",
           "max.in.flight", "sticky.partitioning.linger.ms", "enable.gapless.guarantee",
           "transaction.timeout.ms", "transactional.id", "isolation.level", "group.id", "group.instance.id",
           "auto.offset.reset", "enable.auto.commit", "enable.auto.offset.store", "enable.partition.eof",
           "fetch.min.bytes", "fetch.max.bytes", "fetch.wait.max.ms", "fetch.message.max.bytes",
           "max.partition.fetch.bytes", "check.crcs", "queued.min.messages", "queued.max.messages.kbytes",
           "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms", "client.rack",
           "socket.keepalive.enable", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
           "socket.nagle.disable", "socket.timeout.ms", "socket.connection.setup.timeout.ms",
           "connections.max.idle.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
           "topic.metadata.refresh.interval.ms", "metadata.max.age.ms", "statistics.interval.ms",
           "api.version.request", "api.version.request.timeout.ms", "broker.address.family",
           "client.dns.lookup", "log_level", "debug", "log.connection.close", "log.queue", "log.thread.name"}
GSSAPI_REFUSED = (
    "Kerberos (GSSAPI) is not available: the confluent-kafka wheel's librdkafka is built without libsasl2 (its "
    "build options: PLAIN SASL_SCRAM OAUTHBEARER), so no executor could log in; use SCRAM-SHA-512, SCRAM-SHA-256 "
    "or OAUTHBEARER, or install confluent-kafka built from source against a librdkafka with libsasl2 of at least "
    "confluent-kafka's own version (see the README's Secured clusters)")
_FIXES = {
    "GSSAPI": GSSAPI_REFUSED,
    "ssl.certificate.pem": "put the client certificate in a file readable only by its owner and set "
                           "ssl.certificate.location",
    "ssl.key.pem": "put the private key in a file readable only by its owner and set ssl.key.location "
                   "(and ssl.key.password)",
    "sasl.jaas.config": "set sasl.username and sasl.password (librdkafka and the control plane do not read JAAS)",
}


logger = logging.getLogger(__name__)


class ClientSettingsError(SinkConfigError):
    """A client setting the driver's control plane cannot honour: ``reason`` names the key (``key``),
    the message adds the fix (``fix``)."""

    def __init__(self, reason: str, key: str = "", fix: str = "") -> None:
        super().__init__(f"{reason}: {fix}" if fix else reason)
        self.reason, self.key, self.fix = reason, key, fix


def _refuse(key: str, value: str, fix: str) -> ClientSettingsError:
    shown = "***" if is_secret_key(key) else repr(value)
    return ClientSettingsError(
        f"client setting {key}={shown} cannot be carried to the kafka-eos driver's transaction control "
        f"plane (kafka-python), and dropping it would change how it connects", key, fix)


def _store_refused(problem: StoreProblem, conf: Mapping[str, str]) -> ClientSettingsError:
    shown = "***" if is_secret_key(problem.key) else repr(conf.get(problem.key, ""))
    return ClientSettingsError(f"client setting {problem.key}={shown} cannot be used: {problem.problem}",
                               problem.key, problem.fix)


def check_client_settings(conf: Mapping[str, str], control_plane: bool = True) -> None:
    """The one rule: raise ``ClientSettingsError`` (key and fix named) for a setting that would
    fail a run once started. ``control_plane``: the exactly-once sink's cluster, whose settings the
    driver's transaction control plane must carry too; else only what no client can use (keystores,
    truststores)."""
    conf = {k: str(v) for k, v in conf.items()}
    try:
        keystores.check(conf)
        truststores.check(conf)
    except StoreProblem as problem:
        raise _store_refused(problem, conf) from None
    if control_plane:
        try:
            kafka_python_settings({"bootstrap.servers": "", **conf})
        except (ssl.SSLError, OSError) as exc:  # a certificate, key or CRL file that does not load
            raise ClientSettingsError(f"the TLS files of these client settings do not load: {exc}", "ssl.*",
                                      "check the ssl.*.location files and ssl.key.password") from None


def is_security_key(key: str) -> bool:
    return "sasl" in key or "ssl" in key or key.startswith("security.")


def _check_keys(conf: Mapping[str, str]) -> None:
    for key, value in conf.items():
        if is_security_key(key) and key not in CARRIED:
            fixes = {**_FIXES, **keystores.FIXES, **truststores.FIXES}
            raise _refuse(key, value, fixes.get(key, f"remove {key} or use a setting the control plane carries "
                                                     f"({', '.join(sorted(k for k in CARRIED if is_security_key(k)))})"))


def _mechanism(conf: Mapping[str, str]) -> str | None:
    given = {k: conf[k].strip().upper() for k in ("sasl.mechanism", "sasl.mechanisms") if k in conf}
    if len(set(given.values())) > 1:
        raise _refuse("sasl.mechanisms", conf["sasl.mechanisms"], "set only sasl.mechanism (one mechanism)")
    for key, mechanism in given.items():
        if mechanism not in MECHANISMS:
            raise _refuse(key, conf[key], _FIXES.get(mechanism, f"use one of {', '.join(sorted(MECHANISMS))}"))
        return mechanism
    return None


def _verify(conf: Mapping[str, str]) -> tuple[bool, bool]:
    """(verify the certificate, check the hostname)."""
    algorithm = conf.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", "none"):
        raise _refuse("ssl.endpoint.identification.algorithm", algorithm, "use https (check the host name) or none")
    verification = conf.get("enable.ssl.certificate.verification", "true").strip().lower()
    if verification not in ("true", "false"):
        raise _refuse("enable.ssl.certificate.verification", verification, "use true or false")
    verify = verification == "true"
    return verify, verify and algorithm == "https"


def ssl_context(conf: Mapping[str, str]) -> ssl.SSLContext:
    """The TLS context librdkafka would use for these settings, built in memory."""
    verify, check_hostname = _verify(conf)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = check_hostname
    context.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE
    location = conf.get("ssl.ca.location")
    if "ssl.ca.pem" in conf:
        context.load_verify_locations(cadata=conf["ssl.ca.pem"])
    if truststores.LOCATION in conf:
        context.load_verify_locations(cadata=_trusted(conf))
    if location and location != "probe":
        if not Path(location).exists():
            raise _refuse("ssl.ca.location", location, "no such file or directory: point it at the CA's PEM file")
        context.load_verify_locations(**({"capath": location} if Path(location).is_dir() else {"cafile": location}))
    if location == "probe" or not (location or "ssl.ca.pem" in conf or truststores.LOCATION in conf):
        context.load_default_certs()
    if "ssl.crl.location" in conf:
        context.load_verify_locations(cafile=conf["ssl.crl.location"])
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    if "ssl.cipher.suites" in conf:
        context.set_ciphers(conf["ssl.cipher.suites"])
    _client_certificate(conf, context)
    return context


def _trusted(conf: Mapping[str, str]) -> str:
    try:
        return truststores.ca_pem(conf)
    except StoreProblem as problem:
        raise _store_refused(problem, conf) from None


def _client_certificate(conf: Mapping[str, str], context: ssl.SSLContext) -> None:
    certificate, key = conf.get("ssl.certificate.location"), conf.get("ssl.key.location")
    if key and not certificate:
        raise _refuse("ssl.key.location", key or "", "also set ssl.certificate.location (mutual TLS needs both)")
    if certificate:
        context.load_cert_chain(certificate, key, conf.get("ssl.key.password"))
    if keystores.LOCATION in conf:
        try:
            keystores.load_into(context, conf)
        except StoreProblem as problem:
            raise _store_refused(problem, conf) from None


def kafka_python_settings(conf: Mapping[str, str]) -> dict[str, object]:
    """KafkaAdminClient keyword arguments for librdkafka settings ``conf``; refuses what it cannot carry."""
    conf = {k: str(v) for k, v in conf.items()}
    _check_keys(conf)
    unknown = sorted(k for k in conf if k not in CARRIED and k not in IGNORED)
    if unknown:
        logger.info("the transaction control plane does not use client settings %s (not security-related)", unknown)
    protocol = conf.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise _refuse("security.protocol", protocol, f"use one of {', '.join(sorted(PROTOCOLS))}")
    settings: dict[str, object] = {"bootstrap_servers": conf["bootstrap.servers"], "security_protocol": protocol}
    if "client.id" in conf:
        settings["client_id"] = conf["client.id"]
    mechanism = _mechanism(conf)
    if protocol.startswith("SASL_"):
        if mechanism is None:
            raise _refuse("security.protocol", protocol, "set sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or "
                                                         "OAUTHBEARER); librdkafka's default GSSAPI is not carried")
        settings.update(sasl_mechanism=mechanism, sasl_plain_username=conf.get("sasl.username"),
                        sasl_plain_password=conf.get("sasl.password"))
        if mechanism == "OAUTHBEARER":
            try:
                settings["sasl_oauth_token_provider"] = oauth_provider(conf)
            except OAuthTokenError as exc:
                raise _refuse("sasl.mechanism", mechanism, str(exc)) from None
    if protocol in ("SSL", "SASL_SSL"):
        context = ssl_context(conf)
        settings.update(ssl_context=context, ssl_check_hostname=context.check_hostname)
    return settings
