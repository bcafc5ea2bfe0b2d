"""The query survives hung brokers, black holes and lossy links (issue 24).

A 3-node cluster (replication 3, min ISR 2), a processing-time query (trigger 2 s) and input
arriving throughout. One broker at a time is hung (SIGSTOP), cut off (every packet to its ports
dropped, both ways) or behind a lossy link (a random share of its packets dropped), then healed. In every
case the query never stops on its own, batches keep committing while the fault lasts, and every
produced id is in the read_committed output exactly once. Real brokers, real spark-submit.
"""
from __future__ import annotations

import os

import time
from dataclasses import dataclass
from typing import Callable, ContextManager

import pytest

from kafka_eos.connectors.dev.local_kafka import ClusterSettings, LocalKafkaCluster
from integration_tests import network_faults as faults
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, create_topic, unique
from integration_tests.pipeline_runs import kill_group, start_job, tail
from integration_tests.providers import local_broker
from integration_tests.broker.test_broker_outage import Feeder, latest_batch, wait_complete, wait_started

HEAL_S = 15


@dataclass(frozen=True)
class Fault:
    name: str
    node: Callable[[LocalKafkaCluster, str], int]  # (cluster, sink prefix) -> node id
    inject: Callable[[LocalKafkaCluster, int], ContextManager[None]]
    seconds: float


def bootstrap_first(cluster: LocalKafkaCluster, prefix: str) -> int:
    return cluster.nodes[0].node_id  # the first of bootstrap.servers


def coordinator(cluster: LocalKafkaCluster, prefix: str) -> int:
    """The transaction coordinator of the sink's first id; another node if it is the bootstrap one."""
    found = faults.transaction_coordinator(cluster.bootstrap, f"{prefix}-0-0")
    return found if found != cluster.nodes[0].node_id else cluster.nodes[1].node_id


def last(cluster: LocalKafkaCluster, prefix: str) -> int:
    return cluster.nodes[-1].node_id


def commit_times(checkpoint) -> list[float]:
    return sorted(p.stat().st_mtime for p in (checkpoint / "commits").glob("[0-9]*") if p.name.isdigit())


def run_with_faults(tmp_path, plan: list[Fault]) -> dict:
    """Run the query through ``plan`` one fault after another; assert it survived; return figures."""
    with local_broker(ClusterSettings(nodes=3)) as broker:
        cluster = broker.cluster
        names = {"input": unique("in"), "output": unique("out"), "prefix": unique("netfault")}
        create_topic(broker.bootstrap, names["input"], partitions=3)   # replication 3 (the cluster default)
        create_topic(broker.bootstrap, names["output"], partitions=3)
        feeder = Feeder(broker.bootstrap, names["input"])
        feeder.start()
        checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"
        args = ["--bootstrap", broker.bootstrap, "--input", names["input"], "--output", names["output"],
                "--checkpoint", str(checkpoint), "--prefix", names["prefix"], "--trigger", "2",
                "--run-seconds", "1800", "--max-offsets", "2000", "--stop-file", str(tmp_path / "stop")]
        proc = start_job(args, log)
        progress: dict[str, int] = {}
        try:
            wait_started(checkpoint, proc, log)
            started = time.time()
            for fault in plan:
                node = fault.node(cluster, names["prefix"])
                before = latest_batch(checkpoint)
                with fault.inject(cluster, node):
                    time.sleep(fault.seconds)
                progress[f"{fault.name} node {node}"] = latest_batch(checkpoint) - before
                assert proc.poll() is None, f"query stopped during {fault.name} of node {node}:\n{tail(log)}"
                time.sleep(HEAL_S)
            ids = feeder.stop()
            drained = wait_complete(broker.bootstrap, names["output"], ids, proc)
            times = [t for t in commit_times(checkpoint) if t >= started]
            (tmp_path / "stop").touch()
            rc = proc.wait(180)
        finally:
            feeder.stopping.set()
            kill_group(proc)
        assert drained, f"output incomplete after the input stopped:\n{tail(log)}"
        assert rc == 0 and "query failed" not in log.read_text(), f"job failed ({rc}):\n{tail(log)}"
        assert all(n > 0 for n in progress.values()), f"no batch committed during a fault: {progress}"
        report = check_exactly_once(broker.bootstrap, names["output"], ids)
        assert_exactly_once(report)
        gaps = [b - a for a, b in zip(times, times[1:])]
        figures = {"batches during each fault": progress, "longest batch s": round(max(gaps, default=0), 1),
                   "ids": ids, "report": report.line()}
        print(f"network-fault figures: {figures}")
        return figures




def test_stale_rule_cleanup_spares_a_live_sessions_rules(iptables):
    """Two test sessions on one machine: the second one's cleanup removes only the rules of test
    processes that are gone (an interrupted run), not the running session's faults."""
    import subprocess
    binary, dead = faults.ensure_iptables(), 4_194_999  # above pid_max's default: never a live pid
    rules = {owner: ["INPUT", "-i", "lo", "-p", "tcp", "--dport", "1", "-m", "comment", "--comment",
                     f"{faults.TAG}:{owner}", "-j", "DROP"] for owner in (os.getpid(), dead)}
    for rule in rules.values():
        subprocess.run([binary, "-I", *rule], check=True, capture_output=True)
    try:
        assert faults.remove_stale_rules() >= 1
        listing = subprocess.run([binary, "-S", "INPUT"], capture_output=True, text=True, check=True).stdout
        assert f"{faults.TAG}:{os.getpid()}" in listing and f"{faults.TAG}:{dead}" not in listing
    finally:
        for rule in rules.values():
            subprocess.run([binary, "-D", *rule], check=False, capture_output=True)


def _pair_on_one_local_port(listeners: list) -> list[tuple]:
    """One client connection to each listener, all from the same local port (SO_REUSEADDR lets
    sockets that never listen share it, as Linux's ephemeral port choice does); (client, server)."""
    import socket
    pairs, port = [], 0
    for listener in listeners:
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        client.bind(("127.0.0.1", port))
        port = client.getsockname()[1]
        client.connect(listener.getsockname())
        pairs.append((client, listener.accept()[0]))
    return pairs


def _receives(sock, within_s: float) -> bool:
    import socket
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b"x"
    except socket.timeout:
        return False


def test_cutting_a_connection_spares_another_with_the_same_local_port(iptables):
    """The black hole and the driver cut-off drop the connections their process opened before the
    fault. In CI a rule on such a connection's local port alone also cut a parallel test session's
    admin client, whose connection to its own broker had got the same ephemeral port (its connect
    timed out). Both connections here share one local port; only the cut one must go silent."""
    import socket
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    (cut_client, cut_server), (kept_client, kept_server) = _pair_on_one_local_port(listeners)
    try:
        assert cut_client.getsockname() == kept_client.getsockname()
        cut = (cut_client.getsockname()[1], cut_server.getsockname()[1])
        with faults.cut_connections([cut]):
            cut_server.sendall(b"x")
            kept_server.sendall(b"x")
            assert _receives(kept_client, 5.0), "the other connection on the same local port was cut too"
            assert not _receives(cut_client, 1.0), "the cut connection still delivered"
    finally:
        for sock in (cut_client, cut_server, kept_client, kept_server, *listeners):
            sock.close()


@pytest.mark.chaos  # make test runs the same 45 s hang of a running query in test_start_faults (one cluster, one job)
def test_query_survives_the_bootstrap_broker_hung_45s(tmp_path):
    """Longer than the source's former 30 s lookup deadline: the reported stop (issue 24). A
    produce in flight when the broker hangs waits out the sink's 30 s data socket timeout
    (``DATA_SOCKET_TIMEOUT_MS``) before its retry on the new leader, so a batch commits during
    the hang only if it lasts longer than that plus a batch: 35 s left 5 s, and on a loaded
    2-core machine the stalled batch took 36.2 s (2026-11-27 CI)."""
    run_with_faults(tmp_path, [Fault("hung", bootstrap_first, faults.hung, 45)])


@pytest.mark.chaos
def test_query_survives_hung_brokers_60s_each(tmp_path):
    run_with_faults(tmp_path, [Fault("hung", coordinator, faults.hung, 60),
                               Fault("hung", bootstrap_first, faults.hung, 60)])


@pytest.mark.chaos
def test_query_survives_a_black_holed_broker(tmp_path, iptables):
    run_with_faults(tmp_path, [Fault("black hole", bootstrap_first, faults.black_hole, 60),
                               Fault("black hole", coordinator, faults.black_hole, 60)])


@pytest.mark.chaos
def test_query_survives_a_lossy_link(tmp_path, iptables):
    lossy = lambda cluster, node: faults.dropped(cluster, node, probability=0.07)  # noqa: E731
    run_with_faults(tmp_path, [Fault("lossy link", bootstrap_first, lossy, 120)])
