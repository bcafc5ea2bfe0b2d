"""Hadoop's mini HDFS cluster for the HDFS store test (issue 63): one NameNode and one DataNode in
one JVM on loopback (``MiniHadoopClusterManager -nomr``: MiniDFSCluster, no YARN nor MapReduce),
its name and data directories in a folder of the test's, from ``hadoop-client-minicluster`` of
pyspark's Hadoop (Maven, ``hadoop_connectors``). Measured here (2 cores, Hadoop 3.5.0, -Xmx256m):
7-9 s to answer on a quiet machine, 15-17 s at a load of 5-7; 237-263 MB RSS, 223-250 MB PSS
(after a streaming query's checkpoint); stopped in under a second. Its warnings go to
``<workdir>/minicluster.log``, shown when it does not start."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from integration_tests.hadoop_connectors import connector_jars
from kafka_eos.connectors.dev.java_env import java_binary

MAIN = "org.apache.hadoop.mapreduce.MiniHadoopClusterManager"
# The JVM options of the suite's other short-lived JVMs (fast_jvms): C1 only, the serial collector.
JVM_OPTS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true")
LOG4J = "log4j.rootLogger=WARN, out\nlog4j.appender.out=org.apache.log4j.ConsoleAppender\n" \
        "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n" \
        "log4j.appender.out.layout.ConversionPattern=%d{HH:mm:ss,SSS} %p %c{1}: %m%n\n"


def _port(details: Path) -> int | None:
    """The NameNode's port once the manager wrote its details (after the DataNode registered)."""
    try:
        return int(json.loads(details.read_text())["namenode_port"])
    except (OSError, ValueError, KeyError):
        return None


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def _tail(log: Path, chars: int = 4000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the cluster's process group (its shutdown hook stops the DataNode and NameNode),
    SIGKILL after 30 s: no java left behind."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


@contextmanager
def hdfs_cluster(workdir: Path, heap: str = "256m", timeout_s: float = 180.0) -> Iterator[str]:
    """A mini HDFS cluster with its files under ``workdir``; yields ``hdfs://127.0.0.1:<port>`` once the
    NameNode answers with its DataNode registered, and stops the cluster on exit."""
    jars = connector_jars("minicluster")
    workdir.mkdir(parents=True, exist_ok=True)
    details, log = workdir / "details.json", workdir / "minicluster.log"
    details.unlink(missing_ok=True)
    (workdir / "log4j.properties").write_text(LOG4J)
    command = [java_binary(), f"-Xmx{heap}", *JVM_OPTS, f"-Dlog4j.configuration=file:{workdir / 'log4j.properties'}",
               "-cp", os.pathsep.join(jars), MAIN,
               "-nomr", "-format", "-nnport", "0", "-nnhttpport", "0", "-writeDetails", str(details),
               "-D", f"hdfs.minidfs.basedir={workdir / 'dfs'}",
               "-D", "dfs.namenode.rpc-bind-host=127.0.0.1", "-D", "dfs.datanode.hostname=127.0.0.1"]
    began = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    try:
        port = None
        while port is None or not _answers(port):
            if process.poll() is not None:
                raise AssertionError(f"the mini HDFS cluster exited ({process.returncode}):\n{_tail(log)}")
            if time.monotonic() - began > timeout_s:
                raise AssertionError(f"the mini HDFS cluster did not answer in {timeout_s:.0f} s:\n{_tail(log)}")
            time.sleep(0.25)
            port = _port(details)
        print(f"mini HDFS cluster (pid {process.pid}) answers at hdfs://127.0.0.1:{port} after "
              f"{time.monotonic() - began:.1f} s")
        yield f"hdfs://127.0.0.1:{port}"
    finally:
        _stop(process)
