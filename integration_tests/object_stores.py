"""Object storage on loopback for the store tests: moto's S3 server, and s3fs mounting one of its
buckets as a FUSE file system (what Databricks' /dbfs and /Volumes, gcsfuse and blobfuse are: a
path without hard links whose rename copies the object). Neither is skipped when missing: moto is in
the test extra, s3fs a Debian package .ci/run installs."""
from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, what: str, bound_s: float = 60) -> None:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(f"{what} exited with {proc.returncode}") from None
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"{what} did not answer within {bound_s} s")


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3 server on a free loopback port; yields ``host:port``."""
    import moto.server  # noqa: F401 - in the test extra (pip install -e .[test]): fail, never skip, without it
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, server, "moto's S3 server")
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(30)


def create_bucket(endpoint: str, bucket: str) -> None:
    from pyarrow import fs
    fs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1", access_key="testing",
                    secret_key="testing", allow_bucket_creation=True).create_dir(bucket)


@contextlib.contextmanager
def fuse_mount(endpoint: str, bucket: str, where: Path, *options: str) -> Iterator[Path]:
    """``bucket`` of the S3 server at ``endpoint`` mounted with s3fs at ``where`` (unmounted after);
    ``options``: more of s3fs's ``-o`` options (``ro``: a mount that refuses every write)."""
    s3fs = shutil.which("s3fs")
    assert s3fs, "s3fs is missing: apt-get install s3fs (.ci/run installs it)"
    where.mkdir(parents=True, exist_ok=True)
    secrets = where.parent / f".{where.name}.passwd"
    secrets.write_text("testing:testing\n")
    secrets.chmod(0o600)
    subprocess.run([s3fs, bucket, str(where), "-o", f"passwd_file={secrets}", "-o", f"url=http://{endpoint}",
                    "-o", "use_path_request_style", "-o", "nonempty", *(a for o in options for a in ("-o", o))],
                   check=True, timeout=60)
    try:
        deadline = time.monotonic() + 30
        while not where.is_mount():
            assert time.monotonic() < deadline, f"s3fs did not mount {bucket} at {where} within 30 s"
            time.sleep(0.2)
        yield where
    finally:
        for command in (["fusermount", "-u", str(where)], ["fusermount3", "-u", str(where)], ["umount", str(where)]):
            if shutil.which(command[0]) and subprocess.run(command, capture_output=True).returncode == 0:
                break
