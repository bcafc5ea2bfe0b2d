"""`kafka-eos run --master local[2]` listens on the loopback address only: the driver's RPC and
block-manager ports, the Python workers and, when asked for with --spark-ui, the Spark UI."""
from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import time

import psutil

from kafka_eos.connectors.demo_data import create_topics, produce_orders, read_committed
from kafka_eos.connectors.spark_harness import python_env
from integration_tests.pipeline_cli import kafka_eos
from integration_tests.pipeline.test_pipeline_stop import Run, pipeline  # noqa: F401 - the fixture

SS_PID = re.compile(r"pid=(\d+)")


def listening(pids: set[int]) -> list[tuple[str, int, str]]:
    """(local address, pid, process name) of every listening TCP socket of ``pids``, as ``ss -ltnp`` lists them."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        fields = line.split()
        owners = {int(p) for p in SS_PID.findall(line)}
        found += [(fields[3], pid, _name(pid)) for pid in owners & pids]
    return found


def _name(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except psutil.NoSuchProcess:
        return "?"


def job_pids(root: int) -> set[int]:
    try:
        parent = psutil.Process(root)
        return {root, *(c.pid for c in parent.children(recursive=True))}
    except psutil.NoSuchProcess:
        return set()


def is_loopback(address: str) -> bool:
    """``ss``'s local address (``127.0.0.1:4040``, ``[::1]:80``, ``[::ffff:127.0.0.1]:4040``, ``*:80``)."""
    host = address.rsplit(":", 1)[0].strip("[]").split("%")[0]
    if host == "*":
        return False
    ip = ipaddress.ip_address(host)
    mapped = getattr(ip, "ipv4_mapped", None)  # a Java socket's IPv4 address seen through IPv6
    return (mapped or ip).is_loopback


class LocalRun(Run):
    """Run, with SPARK_LOCAL_IP unset (a user's shell rarely has it) and Spark's own log (--verbose)."""

    def __init__(self, args, bootstrap, checkpoints) -> None:
        env = {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints)}
        env.pop("SPARK_LOCAL_IP", None)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            super().__init__(args, bootstrap, checkpoints)
        finally:
            os.environ.clear()
            os.environ.update(saved)


def test_a_local_master_run_listens_on_loopback_only(bootstrap, tmp_path, pipeline):  # noqa: F811
    path, source, sink = pipeline
    create_topics(bootstrap, {source: 2, sink: 2})
    produce_orders(bootstrap, source, 400, poison=0, aborted_every=400, aborted_size=5)
    run = LocalRun(["run", str(path), "--master", "local[2]", "--verbose", "--spark-ui"], bootstrap, tmp_path)
    seen: list[tuple[str, int, str]] = []
    try:
        run.wait_for_batches("orders-json", 1, timeout=600)
        for _ in range(6):  # the driver, its Python workers and the UI, sampled while batches run
            seen += listening(job_pids(run.proc.pid))
            time.sleep(0.5)
    finally:
        stop = kafka_eos(["stop", str(path)], bootstrap, tmp_path, timeout=300)
        assert stop.code == 0, stop.log()
        assert run.finish(timeout=600) == 0, run.log()
    assert seen, "the job listens on some port (the driver's RPC at least)"
    ui = [line for line in run.out + run.err if "SparkUI" in line and "http://" in line]
    assert ui and all("127.0.0.1" in line for line in ui), f"the UI was asked for, on loopback: {ui}"
    outside = sorted({a for a, _, _ in seen if not is_loopback(a)})
    assert outside == [], f"listening beyond loopback: {outside} (all: {sorted(set(seen))})"
    assert len(read_committed(bootstrap, sink)) == 400, "the run itself went through"
