"""Graceful stop of `kafka-eos run` (SIGTERM, then `kafka-eos stop`) with input arriving; the
restarts resume exactly once and find no recovery work. A stop requested during a backlog plans
no new batch: the running one commits and the run ends."""
from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.stop import request_stop, withdraw_stop
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import EXAMPLES, REPO, kafka_eos
from kafka_eos.connectors.spark_harness import python_env

RECOVERY = ("lingering", "decided but not fully committed", "re-written transaction", "recover")


@pytest.fixture
def pipeline(tmp_path: Path) -> tuple[Path, str, str]:
    """orders-json.yaml on topics of its own, a 2-second trigger, small batches, skip on bad input."""
    topics = (unique("orders"), unique("priced"))
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [topics[0]], topics[1]
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["source"]["max_offsets_per_trigger"] = 500
    doc["sink"]["transactional_id_prefix"] = unique("stop")
    doc["checkpoint"]["trigger"] = "2 seconds"
    doc["errors"] = {"on_decode_error": "skip"}
    path = tmp_path / "orders-stop.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, *topics


class Run:
    """`kafka-eos run` in the background, its stdout and stderr collected line by line."""

    def __init__(self, args: list[str], bootstrap: str, checkpoints: Path) -> None:
        env = {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(checkpoints)}
        self.proc = subprocess.Popen([sys.executable, "-m", "kafka_eos.connectors.cli", *args], env=env, cwd=REPO,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self._threads = [threading.Thread(target=self._drain, args=(s, l), daemon=True)
                         for s, l in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _drain(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    def wait_for_batches(self, pipeline: str, count: int, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(l.startswith(f"kafka-eos {pipeline} batch ") for l in self.out) >= count:
                return
            assert self.proc.poll() is None, self.log()
            time.sleep(0.5)
        raise AssertionError(f"no {count} batches in {timeout} s:\n{self.log()}")

    def finish(self, timeout: float = 120) -> int:
        code = self.proc.wait(timeout)
        for thread in self._threads:
            thread.join(10)
        return code

    def log(self) -> str:
        return "\n".join([l for l in self.out + self.err if "\tat " not in l][-40:])


FEED_PAUSE_S = 1.0  # about 170 orders/s, below the pipeline's 250/s (500 per 2 s trigger): no growing backlog


def feed(bootstrap: str, topic: str, runs: dict[str, int], stop: threading.Event) -> None:
    """Orders in small committed transactions until ``stop`` is set, slower than the pipeline
    reads them, so that input arrives throughout and the final ``--once`` run has little left."""
    while not stop.is_set():
        data = produce_orders(bootstrap, topic, 200, aborted_every=200, aborted_size=5)
        runs[data.run] = 200
        stop.wait(FEED_PAUSE_S)


@contextlib.contextmanager
def input_arriving(bootstrap: str, source: str, sink: str, runs: dict[str, int]) -> Iterator[None]:
    """The topics, 1,500 orders in ``source``, then more arriving (``feed``, counted in ``runs``) until the block ends."""
    create_topics(bootstrap, {source: 2, sink: 2})
    first = produce_orders(bootstrap, source, 1500, aborted_every=500, aborted_size=10)
    runs[first.run] = 1500
    arriving = threading.Event()
    feeder = threading.Thread(target=feed, args=(bootstrap, source, runs, arriving), daemon=True)
    feeder.start()
    try:
        yield
    finally:
        arriving.set()
        feeder.join(60)


def no_recovery(stderr: list[str]) -> None:
    found = [l for l in stderr if "kafka-eos" in l and any(word in l.lower() for word in RECOVERY)]
    assert not found, f"the restart found recovery work: {found}"


def stopped_line(run: Run, pipeline: str) -> str:
    lines = [l for l in run.out if l.startswith(f"kafka-eos {pipeline}: stopped after batch ")]
    assert lines and " at offsets " in lines[0], run.log()
    return lines[0]


@pytest.mark.slow
@pytest.mark.long  # minutes: make long (CI, after make test)
def test_stop_with_input_arriving_then_restart_exactly_once(bootstrap, tmp_path, pipeline):
    """1. SIGTERM while batches run and input arrives; 2. a restart stopped by `kafka-eos stop`
    from another process; 3. a backlog of small batches and no trigger interval: Spark plans the
    next batch as soon as one commits, so the run is never idle between batches; once the stop is
    requested the source plans no new data, the batch running then (or one being planned at that
    moment) is the last; 4. the rest with --once. No restart finds recovery work; every id once."""
    path, source, sink = pipeline
    runs: dict[str, int] = {}
    with input_arriving(bootstrap, source, sink, runs):
        # 1. SIGTERM while batches run and input arrives
        run = Run(["run", str(path)], bootstrap, tmp_path)
        run.wait_for_batches("orders-json", 2)
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish() == 143, run.log()  # a signal's stop: 128 + SIGTERM, no stop request left
        stopped_line(run, "orders-json")

        # 2. restart; `kafka-eos stop` from another process
        again = Run(["run", str(path)], bootstrap, tmp_path)
        again.wait_for_batches("orders-json", 2)
        stop = kafka_eos(["stop", str(path)], bootstrap, tmp_path, timeout=120)
        assert stop.code == 0, stop.log()
        assert again.finish() == 0, again.log()
        stopped_line(again, "orders-json")
        assert not list(tmp_path.rglob("kafka-eos-stop")), "the marker is removed when honoured"
        no_recovery(again.err)
        held = kafka_eos(["run", str(path)], bootstrap, tmp_path, timeout=120)  # e.g. a supervisor's restart
        assert held.code == 0 and "a stop was requested" in held.stderr, held.log()
        assert kafka_eos(["resume", str(path)], bootstrap, tmp_path, timeout=60).code == 0

    # 3. a stop during a backlog plans no new batch
    doc = yaml.safe_load(path.read_text())
    doc["checkpoint"]["trigger"] = "0 seconds"
    doc["source"]["max_offsets_per_trigger"] = 100
    path.write_text(yaml.safe_dump(doc))
    backlog = produce_orders(bootstrap, source, 6000, aborted_every=3000, aborted_size=10)   # ~60 batches
    runs[backlog.run] = 6000
    checkpoint = tmp_path / "orders-json"
    third = Run(["run", str(path)], bootstrap, tmp_path)
    third.wait_for_batches("orders-json", 3)
    planned = CheckpointReader(str(checkpoint)).offset_batches()[-1]
    request_stop(str(checkpoint))
    assert third.finish(timeout=400) == 0, third.log()
    stopped_line(third, "orders-json")
    no_recovery(third.err)
    reader = CheckpointReader(str(checkpoint))
    last = reader.offset_batches()[-1]
    assert last <= planned + 1, f"batches {planned + 2}..{last} were planned after the stop request"
    assert reader.commit_batches()[-1] == last, "the last planned batch committed before the stop"

    # 4. the rest, --once in one batch (not ~55 more of 100 records); every id exactly once in the
    # read_committed output
    withdraw_stop(str(checkpoint))  # what `kafka-eos resume` does
    del doc["source"]["max_offsets_per_trigger"]
    path.write_text(yaml.safe_dump(doc))
    rest = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert rest.code == 0, rest.log()
    no_recovery(rest.stderr.splitlines())
    report = order_report(bootstrap, runs, topic=sink)
    assert report == {"out": sum(runs.values()), "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}


@pytest.mark.chaos  # a spark-submit run (~1.5 min): `make chaos`; make test keeps the in-process run's SIGTERM
def test_sigterm_to_a_spark_submit_run_stops_its_driver_after_the_running_batch(bootstrap, tmp_path, pipeline):
    """`kafka-eos run --master` as a supervisor or a Kubernetes pod runs it: SIGTERM reaches only
    the process it started (kafka-eos), not spark-submit's driver. The driver still stops after its
    running batch (the stop marker), the run exits 143, and a restart finds nothing to recover."""
    path, source, sink = pipeline
    runs: dict[str, int] = {}
    with input_arriving(bootstrap, source, sink, runs):
        run = Run(["run", str(path), "--master", "local[2]"], bootstrap, tmp_path)
        run.wait_for_batches("orders-json", 2)
        run.proc.send_signal(signal.SIGTERM)  # kafka-eos alone, as `kubectl delete pod` or `systemctl stop` (KillMode=mixed)
        assert run.finish(timeout=240) == 143, run.log()
        stopped_line(run, "orders-json")
    rest = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert rest.code == 0, rest.log()
    no_recovery(rest.stderr.splitlines())
    assert order_report(bootstrap, runs, topic=sink) == \
        {"out": sum(runs.values()), "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
