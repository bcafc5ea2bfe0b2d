"""The class-data archive of ``kafka-eos run``'s driver JVM (issue 45: a quick restart).

A driver that maps an archive (``connectors.jvm_class_archive``) reads Spark's classes parsed and
verified from one file instead of loading them from its jars. ``kafka-eos run`` keeps one per
user, JDK, Spark jars and driver JVM options, in ``$XDG_CACHE_HOME/kafka-eos/jvm`` (else
``~/.cache/kafka-eos/jvm``; ``KAFKA_EOS_JVM_ARCHIVES`` names another folder, ``off`` turns it off).

Enforced here:
- the first run without an archive has its driver write one when it exits cleanly (``--once``, a
  graceful stop; a killed driver writes none), to a temporary name, moved into place only once
  complete (``install``): a run maps either a whole archive or none, and two runs at once never
  share a partial file. The archive holds the classes this pipeline's driver loaded;
- the key includes the driver's other JVM options (``SPARK_SUBMIT_OPTS``): another collector or
  heap layout never maps an archive made for different ones (the JVM would refuse it silently);
- a ``SPARK_SUBMIT_OPTS`` that already names an archive (``SharedArchiveFile``,
  ``ArchiveClassesAtExit``) is left as the user set it;
- only the driver of a client-mode run is concerned: executors of a cluster start as before.
  ``kafka-eos run --master`` passes the options to spark-submit (``submit``); without ``--master``
  the driver is this process's own JVM (pyspark's gateway, ``for_local_driver``): the options go
  to the JVM it launches, and after a first run the gateway's JVM is ended at the run's end, so it
  writes the archive before this process exits. A JVM this process had already started is left as is.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, MutableMapping

from kafka_eos import KafkaEosError
from kafka_eos.connectors import jvm_class_archive
from kafka_eos.connectors.pipeline.user_cache import cache_folder

ARCHIVES_ENV = jvm_class_archive.ARCHIVES_ENV
USER_SET = ("SharedArchiveFile", "ArchiveClassesAtExit")


@dataclass(frozen=True)
class DriverArchive:
    """The driver's archive options for one run; ``partial``: where it writes a new one at exit."""
    options: tuple[str, ...] = ()
    archive: Path | None = None
    partial: Path | None = None

    def install(self) -> bool:
        """After the driver exited: move a newly written archive into place. True if one was."""
        if self.partial is None or self.archive is None:
            return False
        try:
            if self.partial.is_file() and self.partial.stat().st_size > 0:
                self.partial.replace(self.archive)
                return True
            return False
        finally:
            shutil.rmtree(self.partial.parent, ignore_errors=True)


def archive_dir(env: Mapping[str, str]) -> Path | None:
    """Where this user's archives live, or None (turned off)."""
    return cache_folder(env, ARCHIVES_ENV, "jvm")


def plan(env: Mapping[str, str]) -> DriverArchive:
    """The archive options for a driver started with ``env`` (see module invariants)."""
    user = env.get("SPARK_SUBMIT_OPTS", "")
    directory = archive_dir(env)
    if directory is None or any(name in user for name in USER_SET):
        return DriverArchive()
    try:
        archive = jvm_class_archive.spark_archive(directory, user)
    except (OSError, subprocess.SubprocessError, KafkaEosError):  # no java to ask (java_env's error), an
        return DriverArchive()                                      # unreadable folder: start without
    if archive.is_file():
        return DriverArchive(tuple(jvm_class_archive.mapped(archive)), archive)
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=archive.parent, prefix=".writing-")) / archive.name
    except OSError:
        return DriverArchive()
    return DriverArchive((f"-XX:ArchiveClassesAtExit={partial}", *jvm_class_archive.QUIET), archive, partial)


def with_archive(env: dict[str, str], driver: DriverArchive) -> dict[str, str]:
    """``env`` with the archive's options in ``SPARK_SUBMIT_OPTS`` (after the user's)."""
    if not driver.options:
        return env
    return {**env, "SPARK_SUBMIT_OPTS": " ".join([env.get("SPARK_SUBMIT_OPTS", ""), *driver.options]).strip()}


@contextmanager
def for_local_driver(env: MutableMapping[str, str] = os.environ) -> Iterator[DriverArchive]:
    """Around the life of a driver JVM that pyspark's gateway launches in this process."""
    from pyspark import SparkContext
    if SparkContext._gateway is not None:  # a JVM already runs: its options are set
        yield DriverArchive()
        return
    driver = plan(env)
    env.update(with_archive(dict(env), driver))
    try:
        yield driver
    finally:
        if driver.partial is not None:
            _end_gateway_jvm()
            driver.install()


def _end_gateway_jvm(timeout_s: float = 120) -> None:
    """End pyspark's gateway JVM (it exits on EOF of its stdin) and wait for it: its archive is
    written at that exit. Called once the run's session is stopped."""
    from pyspark import SparkContext
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return
    SparkContext._gateway = SparkContext._jvm = None
    gateway.shutdown()
    if proc.stdin:
        proc.stdin.close()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
