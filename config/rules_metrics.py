"""The rule of the driver's metrics endpoint (``metrics:``): where it binds, its TLS and basic auth."""
from __future__ import annotations

import ipaddress
import os
import re

from kafka_eos.config.model import MetricsSpec, PipelineConfig
from kafka_eos.config.violations import Context, Violation

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")


def _is_host(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return bool(_HOST_NAME.match(text))


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _metrics_security(m: MetricsSpec) -> list[Violation]:
    """TLS needs its certificate and key, both readable; basic auth is ``user:password`` and, off
    loopback, travels over TLS only."""
    found = []
    if bool(m.tls_cert_file) != bool(m.tls_key_file):
        found.append(Violation("metrics.tls_key_file" if m.tls_cert_file else "metrics.tls_cert_file",
                               "HTTPS needs both the certificate and its private key",
                               "set metrics.tls_cert_file and metrics.tls_key_file (PEM files), or neither"))
    for key, path in (("metrics.tls_cert_file", m.tls_cert_file), ("metrics.tls_key_file", m.tls_key_file)):
        if path and not os.access(path, os.R_OK):
            found.append(Violation(key, f"{path} cannot be read", f"give the path of a readable PEM file in {key}"))
    if m.basic_auth_user_info is not None:
        user, sep, password = m.basic_auth_user_info.reveal().partition(":")
        if not (user and sep and password):
            found.append(Violation("metrics.basic_auth_user_info", "is not user:password",
                                   "write metrics.basic_auth_user_info: ${METRICS_USER_INFO} with the variable "
                                   "holding user:password"))
        elif not m.tls_cert_file and not _is_loopback(m.host):
            found.append(Violation("metrics.basic_auth_user_info", f"the password would cross the network in clear "
                                   f"text (metrics.host {m.host}, no TLS)", "set metrics.tls_cert_file and "
                                   "metrics.tls_key_file, or bind metrics.host to 127.0.0.1"))
    return found


def metrics(cfg: PipelineConfig, ctx: Context) -> list[Violation]:
    """The Prometheus endpoint binds ``host:port``: a TCP port and an address or name, no URL;
    and its TLS and basic auth settings (``_metrics_security``)."""
    return [] if cfg.metrics is None else endpoint_violations(cfg.metrics)


def endpoint_violations(m: MetricsSpec) -> list[Violation]:
    """What the rule refuses in one endpoint (the file's, or the one ``kafka-eos run``'s flags make)."""
    found = _metrics_security(m)
    if not 1 <= m.port <= 65535:
        found.append(Violation("metrics.port", f"{m.port} is not a TCP port (1 to 65535)",
                               "write metrics.port: 9464 (the default)"))
    if not _is_host(m.host):
        found.append(Violation("metrics.host", f"{m.host!r} is not an IP address or host name to bind to",
                               "write metrics.host: 127.0.0.1 (this machine only, the default) or 0.0.0.0 "
                               "(every interface), without scheme or port"))
    return found
