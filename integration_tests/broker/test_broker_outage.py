"""The query survives a broker outage, source and sink alike (issue 10, point 6).

A 3-node cluster (replication 3, min ISR 2 for the internal and the test topics); each broker
in turn is SIGKILLed, kept down 45 s and restarted, while a processing-time query runs and input
keeps arriving. The query never stops (exit 0, no query exception), batches keep committing
during every outage, and every produced id is in the read_committed output exactly once.
Real brokers, real spark-submit."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from kafka_eos.connectors.dev.local_kafka import ClusterSettings
from integration_tests.kafka_tools import assert_exactly_once, check_exactly_once, create_topic, output_ids, unique
from integration_tests.pipeline_runs import kill_group, start_job, tail
from integration_tests.providers import local_broker

DOWN_S, REJOIN_S, STARTUP_S, DRAIN_S = 45, 15, 600, 150


class Feeder(threading.Thread):
    """Produces ids 0, 1, 2, ... (acks=all, idempotent) until stopped; ``sent`` counts the acked."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "message.timeout.ms": 300_000, "linger.ms": 20})
        self.topic, self.next_id, self.failed = topic, 0, []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            for _ in range(20):
                value = str(self.next_id).encode()
                self.producer.produce(self.topic, key=value, value=value, on_delivery=self._delivered)
                self.next_id += 1
            self.producer.poll(0)
            time.sleep(0.5)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.failed.append((msg.value(), str(err)))

    def stop(self) -> int:
        self.stopping.set()
        self.join(30)
        assert self.producer.flush(300) == 0, "input not all delivered"
        return self.next_id


def latest_batch(checkpoint) -> int:
    """The newest batch Spark's commit log has (the batch fully committed), or -1."""
    done = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*") if p.name.isdigit()]
    return max(done, default=-1)


def wait_started(checkpoint, proc, log) -> None:
    """Wait (STARTUP_S: spark-submit is slow on a loaded machine) until batch 1 is committed."""
    deadline = time.monotonic() + STARTUP_S
    while latest_batch(checkpoint) < 1:
        assert proc.poll() is None, f"job exited early:\n{tail(log)}"
        assert time.monotonic() < deadline, f"no batch committed within {STARTUP_S}s:\n{tail(log)}"
        time.sleep(2)


def wait_complete(bootstrap: str, topic: str, ids: int, proc) -> bool:
    """True once every id below ``ids`` is in the read_committed output (within DRAIN_S)."""
    deadline = time.monotonic() + DRAIN_S
    while time.monotonic() < deadline and proc.poll() is None:
        counts = output_ids(bootstrap, topic)
        if all(counts[i] for i in range(ids)):
            return True
        time.sleep(5)
    return False


@pytest.mark.chaos  # ~7.5 min, so in make chaos; make test has the expired-id run and the retry unit tests
def test_query_survives_each_broker_killed_in_turn(tmp_path):
    run_seconds = 900  # an upper bound: the test stops the query with --stop-file once the output is complete
    with local_broker(ClusterSettings(nodes=3)) as broker:
        cluster = broker.cluster
        names = {"input": unique("in"), "output": unique("out"), "prefix": unique("outage")}
        create_topic(broker.bootstrap, names["input"], partitions=3)   # replication 3 (the cluster default)
        create_topic(broker.bootstrap, names["output"], partitions=3)
        feeder = Feeder(broker.bootstrap, names["input"])
        feeder.start()
        checkpoint = tmp_path / "checkpoint"
        args = ["--bootstrap", broker.bootstrap, "--input", names["input"], "--output", names["output"],
                "--checkpoint", str(checkpoint), "--prefix", names["prefix"], "--trigger", "2",
                "--run-seconds", str(run_seconds), "--max-offsets", "2000",
                "--stop-file", str(tmp_path / "stop")]
        log = tmp_path / "job.log"
        proc = start_job(args, log)
        try:
            wait_started(checkpoint, proc, log)  # the outages begin once the query commits batches
            progress = {}
            for node in cluster.nodes:
                before = latest_batch(checkpoint)
                cluster.stop_node(node.node_id, kill=True)
                time.sleep(DOWN_S)
                progress[node.node_id] = latest_batch(checkpoint) - before
                assert proc.poll() is None, f"query stopped with broker {node.node_id} down:\n{tail(log)}"
                cluster.start_node(node.node_id)
                cluster.wait_ready(120)
                time.sleep(REJOIN_S)
            ids = feeder.stop()
            drained = wait_complete(broker.bootstrap, names["output"], ids, proc)
            (tmp_path / "stop").touch()
            rc = proc.wait(180)
        finally:
            feeder.stopping.set()
            kill_group(proc)
        assert drained, f"output incomplete {DRAIN_S}s after the input stopped:\n{tail(log)}"
        assert rc == 0 and "query failed" not in log.read_text(), f"job failed ({rc}):\n{tail(log)}"
        assert all(n > 0 for n in progress.values()), f"no batch committed during an outage: {progress}"
        assert_exactly_once(check_exactly_once(broker.bootstrap, names["output"], ids))
