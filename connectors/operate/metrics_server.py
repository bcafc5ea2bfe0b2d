"""The HTTP(S) server of the driver's metrics endpoint: where it binds, TLS, basic auth.

Invariants:
- It serves ``/metrics`` of one registry (prometheus_client's WSGI app) on ``host:port`` (port 0:
  any free one, ``port`` tells which), in a daemon thread; ``close`` ends it.
- With a certificate and key it speaks HTTPS only (TLS 1.2 or newer).
- With ``user:password`` every request without those credentials gets 401 (compared in constant
  time); the password is never logged (the server logs no request lines at all).
"""
from __future__ import annotations

import base64
import hmac
import socket
import ssl
import threading
from socketserver import ThreadingMixIn
from typing import Any, Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

App = Callable[[dict, Callable], Iterable[bytes]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return


def with_basic_auth(app: App, user_info: str) -> App:
    """``app`` behind HTTP basic auth with ``user:password``."""
    expected = b"Basic " + base64.b64encode(user_info.encode())

    def guarded(environ: dict, start_response: Callable) -> Iterable[bytes]:
        given = environ.get("HTTP_AUTHORIZATION", "").encode()
        if hmac.compare_digest(given, expected):
            return app(environ, start_response)
        start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="kafka-eos metrics"'),
                                            ("Content-Type", "text/plain")])
        return [b"kafka-eos metrics: credentials required\n"]
    return guarded


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


class MetricsServer:
    """``MetricsServer(registry, host, port, user_info=None, cert_file=None, key_file=None)``."""

    def __init__(self, registry, host: str, port: int, user_info: str | None = None,
                 cert_file: str | None = None, key_file: str | None = None) -> None:
        from prometheus_client import make_wsgi_app
        app: App = make_wsgi_app(registry)
        if user_info:
            app = with_basic_auth(app, user_info)
        server_class = type("Server", (_Server,), {"address_family": _family(host)})
        httpd: Any = make_server(host, port, app, server_class, handler_class=_Quiet)
        if cert_file and key_file:
            httpd.socket = tls_context(cert_file, key_file).wrap_socket(httpd.socket, server_side=True)
        self._httpd = httpd
        self.port: int = httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="kafka-eos-metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def _family(host: str) -> socket.AddressFamily:
    return socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][0]
