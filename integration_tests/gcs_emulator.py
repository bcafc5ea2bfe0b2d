"""Google Cloud Storage on loopback for the gs:// store tests: fake-gcs-server (its JSON API: resumable
and multipart uploads, rewrite, generation preconditions, JSON error bodies), built from its Go module
with ``go install`` once per machine into ``build/go-tools/``, run in memory on a free port, no TLS.

Why this one (issue 63, measured 2026-12-03 with gcs-connector 4.0.4): PyPI's gcp-storage-emulator
answers a missing object with an empty-bodied 404, which the connector's batched lookups
(``GoogleCloudStorageImpl.getItemInfos``, called by every ``mkdirs`` and ``create``) take for a
failure ("Error getting 'gs://bucket/p' object"): Spark cannot even make its checkpoint folder.
fake-gcs-server lacks only the objects.move call (``POST .../moveTo/o/...``: 400), which the
connector uses for a rename unless ``fs.gs.operation.move.enable`` is false (then: rewrite and
delete, each with a generation precondition). Not skipped when missing: Go is on the project's
machines, and the module comes from the Go module proxy."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Iterator

from integration_tests.object_stores import _wait_port, free_port

ROOT = Path(__file__).resolve().parents[1]
MODULE = "github.com/fsouza/fake-gcs-server"
VERSION = "v1.56.1"


def _go() -> str:
    go = shutil.which("go") or next((p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if os.path.exists(p)), None)
    assert go, "Go builds fake-gcs-server (the GCS emulator of the gs:// store tests): apt-get install golang-go"
    return go


def server_binary() -> Path:
    """fake-gcs-server at ``VERSION``, built on first use (about 3 minutes on 2 busy cores)."""
    target = ROOT / "build" / "go-tools" / f"fake-gcs-server-{VERSION}"
    binary = target / "fake-gcs-server"
    if not (target / ".complete").exists():
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        done = subprocess.run([_go(), "install", f"{MODULE}@{VERSION}"], capture_output=True, text=True, timeout=1800,
                              env={**os.environ, "GOBIN": str(target), "CGO_ENABLED": "0"})
        assert done.returncode == 0 and binary.exists(), f"go install {MODULE}@{VERSION} failed:\n{done.stderr[-3000:]}"
        (target / ".complete").write_text(VERSION)
    return binary


@contextlib.contextmanager
def gcs_server(log: Path | None = None) -> Iterator[str]:
    """fake-gcs-server in memory on a free loopback port, plain HTTP; yields ``host:port``. ``log``:
    where its request log goes (one line a call, what the tests read to name the calls made)."""
    binary = server_binary()
    port = free_port()
    address = f"127.0.0.1:{port}"
    with open(log if log is not None else os.devnull, "w") as out:
        server = subprocess.Popen([str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                                   "-backend", "memory", "-external-url", f"http://{address}", "-public-host", address,
                                   "-log-level", "info" if log is not None else "warn"],
                                  stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_port(port, server, "fake-gcs-server")
            yield address
        finally:
            server.terminate()
            server.wait(30)


def create_bucket(endpoint: str, bucket: str) -> None:
    request = urllib.request.Request(f"http://{endpoint}/storage/v1/b?project=test", method="POST",
                                     data=json.dumps({"name": bucket}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200, answer.read()


def object_names(endpoint: str, bucket: str, prefix: str) -> list[str]:
    """The names of the objects under ``prefix`` (the emulator's own listing, not the connector's)."""
    names: list[str] = []
    token = ""
    while True:
        url = f"http://{endpoint}/storage/v1/b/{bucket}/o?prefix={urllib.parse.quote(prefix)}"
        if token:
            url += f"&pageToken={urllib.parse.quote(token)}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            page = json.load(answer)
        names += [item["name"] for item in page.get("items", [])]
        token = page.get("nextPageToken", "")
        if not token:
            return names
