"""``kafka-eos verify --follow`` beside a running pipeline (issue 59): every committed batch judged
within the stated delay of its commit, none aged out, and a record another writer commits into the
output mid-run caught with its batch and offset.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer

from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from kafka_eos.connectors.operate.verify_follow import DELAY_BOUND_S
from kafka_eos.txn.log.follow_state import latest_state
from kafka_eos.txn.log.sink_log import SinkLogReader, location_for
from kafka_eos.txn.protocol.states import BatchState
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos, orders_pipeline, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from integration_tests.pipeline.test_alert_fires import (  # noqa: F401
    alert_state, cleared, fires, prometheus_binary, prometheus_config, start_prometheus, value, wait_until)
from integration_tests.pipeline.test_metrics import free_port

EXACT = {"duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
FOLLOW_ROUND_S = 0.5


def follow_pipeline(tmp_path: Path, source: str, sink: str, batch: int = 200, timeout_ms: int = 300_000) -> Path:
    """orders-json.yaml on topics of its own: Spark's default trigger (0 s), ``batch`` orders a batch."""
    return orders_pipeline(tmp_path, (source, sink), "follow", batch, "0 seconds", {"transaction_timeout_ms": timeout_ms})


def committed_batches(checkpoint: Path) -> list[int]:
    reader = SinkLogReader(location_for(str(checkpoint)))
    return [b for b in reader.batch_ids() if (r := reader.get(b)) is not None and r.state is BatchState.COMMITTED]


def wait_line(log: Path, pattern: str, proc, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text() if log.exists() else "")
        if found:
            return found
        assert proc.poll() is None, tail(log)
        time.sleep(0.2)
    raise AssertionError(f"no line matching {pattern!r} in {timeout:.0f} s:\n{tail(log)}")


def stop_process(proc, log: Path, code: int = 143, timeout: float = 120) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout) == code, tail(log)


def test_follow_beside_a_running_pipeline_judges_every_batch_and_names_a_foreign_record(bootstrap, tmp_path):
    source, sink = unique("f-orders"), unique("f-priced")
    create_topics(bootstrap, {source: 2, sink: 2})
    path = follow_pipeline(tmp_path, source, sink)
    runs = {(first := produce_orders(bootstrap, source, 1000, aborted_every=500, aborted_size=10)).run: 1000}
    checkpoint = tmp_path / "orders-json"
    run_log, follow_log = tmp_path / "run.log", tmp_path / "follow.log"
    run = start_kafka_eos(["run", str(path)], bootstrap, tmp_path, run_log)
    follower = start_kafka_eos(["verify", "--follow", str(path), "--interval", str(FOLLOW_ROUND_S)], bootstrap,
                               tmp_path, follow_log)
    arriving = threading.Event()

    def feed() -> None:
        while not arriving.is_set():
            data = produce_orders(bootstrap, source, 200, aborted_every=200, aborted_size=5)
            runs[data.run] = 200
            arriving.wait(1.0)
    feeder = threading.Thread(target=feed, daemon=True)
    try:
        wait_line(follow_log, r"batch(es)? [\d-]+: \d+ verified", follower, 240)
        feeder.start()
        time.sleep(2)
        intruder = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("intruder")})
        intruder.init_transactions(30)
        placed: list = []
        intruder.begin_transaction()
        intruder.produce(sink, json.dumps({"order_id": "intruder-0"}).encode(), b"not-ours", partition=1,
                         on_delivery=lambda err, msg: placed.append(msg.offset()))
        intruder.commit_transaction(30)
        written = time.monotonic()
        caught = wait_line(follow_log, r"batch (\d+): failed: " + re.escape(sink) + r"\[1\] offset (\d+): 1 record\(s\) "
                           r"of another writer", follower, DELAY_BOUND_S)
        delay = time.monotonic() - written
        assert int(caught[2]) == placed[0], caught[0]
        time.sleep(2)
        arriving.set()
        feeder.join(30)
        batches, state = drained_then_stopped(bootstrap, runs, sink, (run, run_log), (follower, follow_log), checkpoint)
    finally:
        arriving.set()
        kill_group(run)
        kill_group(follower)
    assert order_report(bootstrap, runs, topic=sink) == EXACT | {"out": sum(runs.values())}
    assert state.aged_out == 0 and len(batches) == batches[-1] + 1, (state, batches)
    assert state.totals == {"verified": len(batches) - 1, "failed": 1}, (state, len(batches))
    assert int(caught[1]) in batches and delay < DELAY_BOUND_S, (caught[0], delay)
    print(f"follow: {len(batches)} batches, the foreign record caught {delay:.1f} s after its commit "
          f"(batch {caught[1]}, offset {caught[2]}); first run {first.run}")


def follow_delays(log: Path) -> list[float]:
    """The largest delay after commit of each round the follower printed."""
    return [float(m[1]) for m in re.finditer(r"-(\d+\.\d) s after their commit", log.read_text())]


def verified_through(checkpoint: Path, last: int, follower, log: Path, bound_s: float = DELAY_BOUND_S):
    deadline = time.monotonic() + bound_s
    while (state := latest_state(location_for(str(checkpoint)))) is None or state.verified_through < last:
        assert time.monotonic() < deadline and follower.poll() is None, (state, last, tail(log))
        time.sleep(0.5)
    return state


def drained_then_stopped(bootstrap: str, runs: dict[str, int], sink: str, run: tuple, follower: tuple,
                         checkpoint: Path, bound_s: float = 600) -> tuple[list[int], object]:
    """Once every order of ``runs`` is in ``sink``: the run stopped (SIGTERM), the follower let reach its
    last committed batch, then stopped; (the committed batches, the follower's state)."""
    deadline = time.monotonic() + bound_s
    while order_report(bootstrap, runs, topic=sink)["missing"]:
        assert time.monotonic() < deadline and run[0].poll() is None, tail(run[1])
        time.sleep(2)
    stop_process(*run)
    batches = committed_batches(checkpoint)
    state = verified_through(checkpoint, batches[-1], *follower)
    stop_process(*follower)
    return batches, state


@pytest.mark.chaos  # two driver kills and a wait past transaction.timeout.ms (~3 min): `make chaos`
def test_follow_through_driver_kills_and_a_timed_out_decided_batch_rewritten(bootstrap, tmp_path):
    """The driver killed after batch 3's decision and kept down past transaction.timeout.ms (the broker
    aborts the decided transactions: the restart finds them lost and re-writes them), then killed
    after batch 6's decision and restarted at once (recovery commits it): the follower, running
    throughout, judges every committed batch verified (batch 3 by its re-written transactions),
    within the bound, none aged out."""
    source, sink = unique("fk-orders"), unique("fk-priced")
    create_topics(bootstrap, {source: 2, sink: 2})
    runs = {produce_orders(bootstrap, source, 3000, aborted_every=1000, aborted_size=10).run: 3000}
    path = follow_pipeline(tmp_path, source, sink, batch=200, timeout_ms=15_000)
    doc = yaml.safe_load(path.read_text())
    doc["sink"]["batch_margin_ms"] = 5_000
    faults = tmp_path / "faults"
    faults.mkdir()
    checkpoint = tmp_path / "orders-json"
    follow_log = tmp_path / "follow.log"
    follower = start_kafka_eos(["verify", "--follow", str(path), "--interval", str(FOLLOW_ROUND_S)], bootstrap,
                               tmp_path, follow_log)
    procs = [follower]
    try:
        for n, point in enumerate(("after_decision@3", "after_decision@6")):
            doc["sink"]["options"] = {"faultInjection": point, "faultInjectionDir": str(faults)}
            path.write_text(yaml.safe_dump(doc))
            log = tmp_path / f"run-{n}.log"
            procs.append(run := start_kafka_eos(["run", str(path)], bootstrap, tmp_path, log))
            wait_for((faults, f"{point.split('@')[0]}*"), run, 300, log)
            kill_group(run)
            for marker in faults.iterdir():
                marker.unlink()
            if n == 0:
                time.sleep(20)  # > transaction.timeout.ms: the broker aborts batch 3's decided transactions
        doc["sink"]["options"] = {}
        path.write_text(yaml.safe_dump(doc))
        log = tmp_path / "run-last.log"
        procs.append(run := start_kafka_eos(["run", str(path)], bootstrap, tmp_path, log))
        runs[produce_orders(bootstrap, source, 1000).run] = 1000
        wait_line(log, r"batch \d+ ", run, 240)
        batches, state = drained_then_stopped(bootstrap, runs, sink, (run, log), (follower, follow_log), checkpoint)
    finally:
        for proc in procs:
            kill_group(proc)
    assert order_report(bootstrap, runs, topic=sink) == EXACT | {"out": 4000}
    assert "lost" in (tmp_path / "run-1.log").read_text().lower() or "re-writ" in (tmp_path / "run-1.log").read_text()
    assert state.aged_out == 0 and state.totals == {"verified": len(batches)}, (state, batches, tail(follow_log))
    assert max(follow_delays(follow_log)) < DELAY_BOUND_S
    print(f"follow through kills: {len(batches)} batches verified, largest delay {max(follow_delays(follow_log))} s")


@pytest.mark.chaos  # a real Prometheus beside a running pipeline (~2 min): `make chaos`
def test_a_record_committed_into_the_output_fires_verify_failed_from_the_monitors_follower(
        bootstrap, tmp_path, prometheus_binary):  # noqa: F811
    """`kafka-eos monitor --verify` beside a running trigger-0 pipeline: a record another writer
    commits into the output is caught by the monitor's follower (batch and offset in its line), and
    the shipped KafkaEosVerifyFailed fires in a real Prometheus from the monitor alone."""
    source, sink = unique("fm-orders"), unique("fm-priced")
    create_topics(bootstrap, {source: 2, sink: 2})
    runs = {produce_orders(bootstrap, source, 1000).run: 1000}
    path = follow_pipeline(tmp_path, source, sink)
    monitor_port, prometheus_port = free_port(), free_port()
    prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, free_port(), monitor_port),
                                  tmp_path, prometheus_port)
    monitor_log, run_log = tmp_path / "monitor.log", tmp_path / "run.log"
    monitor = start_kafka_eos(["monitor", "--verify", str(path), "--port", str(monitor_port)], bootstrap, tmp_path,
                              monitor_log)
    run = start_kafka_eos(["run", str(path)], bootstrap, tmp_path, run_log)
    try:
        wait_line(monitor_log, r"batch(es)? [\d-]+: \d+ verified", monitor, 240)
        wait_until(lambda: value(prometheus_port, 'max(kafka_eos_verify_follow_timestamp_seconds{exporter="monitor"})'),
                   120, "the monitor exports the follower's state")
        assert alert_state(prometheus_port, "KafkaEosVerifyFailed") is None
        intruder = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("intruder")})
        intruder.init_transactions(30)
        placed: list = []
        intruder.begin_transaction()
        intruder.produce(sink, b'{"order_id": "intruder-0"}', b"not-ours", partition=0,
                         on_delivery=lambda err, msg: placed.append(msg.offset()))
        intruder.commit_transaction(30)
        written = time.monotonic()
        runs[produce_orders(bootstrap, source, 400).run] = 400
        caught = wait_line(monitor_log, r"batch (\d+): failed: " + re.escape(sink) + r"\[0\] offset (\d+)", monitor,
                           DELAY_BOUND_S)
        assert int(caught[2]) == placed[0], caught[0]
        fired = fires(prometheus_port, "KafkaEosVerifyFailed", written, 120)
        stop_process(run, run_log)
    finally:
        kill_group(run)
        monitor.send_signal(signal.SIGTERM)
        monitor.wait(60)
        prometheus.terminate()
        prometheus.wait(30)
    assert order_report(bootstrap, runs, topic=sink) == EXACT | {"out": 1400}
    print(f"monitor --verify: the foreign record caught in batch {caught[1]}; KafkaEosVerifyFailed fired {fired:.1f} s "
          "after its commit")


SOAK_S = float(os.environ.get("KAFKA_EOS_FOLLOW_SOAK_S", "0"))   # 0: until 1,000 batches
ARRIVING = 20   # orders a second while it runs


@pytest.mark.chaos  # 1,000 batches at trigger 0 (~6 min; KAFKA_EOS_FOLLOW_SOAK_S=1800 for the 30-minute run)
def test_a_long_trigger_0_run_is_verified_as_it_runs_and_back_to_batch_0_after(bootstrap, tmp_path):
    """Input arriving throughout, Spark's default trigger, small batches: the follower judges every
    batch within the bound and none ages out; after the run `verify --batches 0..` covers batch 0,
    far beyond Spark's and the sink log's 100-batch windows of old."""
    source, sink = unique("fs-orders"), unique("fs-priced")
    create_topics(bootstrap, {source: 2, sink: 2})
    backlog = 2_000 if SOAK_S else 20_000   # 1,000 batches of 20 offsets, then what arrives
    runs = {produce_orders(bootstrap, source, backlog).run: backlog}
    path = follow_pipeline(tmp_path, source, sink, batch=20)
    checkpoint = tmp_path / "orders-json"
    run_log, follow_log = tmp_path / "run.log", tmp_path / "follow.log"
    run = start_kafka_eos(["run", str(path)], bootstrap, tmp_path, run_log)
    follower = start_kafka_eos(["verify", "--follow", str(path)], bootstrap, tmp_path, follow_log)
    arriving = threading.Event()

    def feed() -> None:  # below the pipeline's pace (~3 batches of 20 a second): it keeps up
        while not arriving.is_set():
            runs[produce_orders(bootstrap, source, ARRIVING, aborted_every=ARRIVING, aborted_size=2).run] = ARRIVING
            arriving.wait(1.0)
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    began = time.monotonic()
    try:
        while (SOAK_S and time.monotonic() - began < SOAK_S) or (not SOAK_S and len(committed_batches(checkpoint)) < 1000):
            assert run.poll() is None and follower.poll() is None, tail(run_log) + tail(follow_log)
            time.sleep(5)
        arriving.set()
        feeder.join(30)
        batches, state = drained_then_stopped(bootstrap, runs, sink, (run, run_log), (follower, follow_log), checkpoint)
    finally:
        arriving.set()
        kill_group(run)
        kill_group(follower)
    assert order_report(bootstrap, runs, topic=sink) == EXACT | {"out": sum(runs.values())}
    delays = follow_delays(follow_log)
    assert state.aged_out == 0 and state.totals == {"verified": len(batches)}, (state, len(batches))
    assert max(delays) < DELAY_BOUND_S, max(delays)
    done = kafka_eos(["verify", str(path), "--batches", "0..", "--json"], bootstrap, tmp_path, timeout=900)
    report = json.loads(done.stdout)
    assert done.code == 0 and report["per_batch"][0]["batch"] == 0, done.log()
    assert len(report["per_batch"]) == len(batches), (len(report["per_batch"]), len(batches))
    print(f"soak: {len(batches)} batches in {time.monotonic() - began:.0f} s, each verified within "
          f"{max(delays):.1f} s (median round {sorted(delays)[len(delays) // 2]:.1f} s); verify 0.. covered all")


@pytest.mark.chaos  # two followers with Spark re-runs (~3 min): `make chaos`
def test_follow_recompute_reruns_its_sample_beside_the_rounds_and_catches_a_changed_transform(bootstrap, tmp_path):
    """`verify --follow --recompute --recompute-every 2` over a finished run: the read-side rounds judge
    every batch at once while the sampled batches are re-run in the worker; every re-run passes.
    Then a follower with fresh state on the YAML with another transform: its re-runs fail."""
    source, sink = unique("fr-orders"), unique("fr-priced")
    create_topics(bootstrap, {source: 2, sink: 2})
    runs = {produce_orders(bootstrap, source, 1500).run: 1500}
    path = follow_pipeline(tmp_path, source, sink, batch=500)
    assert kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path).code == 0
    checkpoint = tmp_path / "orders-json"
    batches = committed_batches(checkpoint)
    sampled = [b for b in batches if b % 2 == 0]
    results = {}
    for name, sql in (("same", None), ("changed", "SELECT key, value FROM source")):
        if sql is not None:
            doc = yaml.safe_load(path.read_text())
            doc["transform"] = {"sql": sql}
            path.write_text(yaml.safe_dump(doc))
            shutil.rmtree(location_for(str(checkpoint)) + "/_verify-follow")
        log = tmp_path / f"follow-{name}.log"
        follower = start_kafka_eos(["verify", "--follow", str(path), "--recompute", "--recompute-every", "2"],
                                   bootstrap, tmp_path, log)
        try:
            for b in sampled:
                wait_line(log, rf"batch {b}: re-run ", follower, 300)
            stop_process(follower, log)
        finally:
            kill_group(follower)
        results[name] = (log.read_text(), latest_state(location_for(str(checkpoint))))
    same_log, same = results["same"]
    assert all(f"batch {b}: re-run verified" in same_log for b in sampled), same_log
    assert same.totals == {"verified": len(batches)}, same
    changed_log, changed = results["changed"]
    assert all(f"batch {b}: re-run failed" in changed_log for b in sampled), changed_log
    assert changed.totals == {"verified": len(batches), "failed": len(sampled)}, changed
    assert order_report(bootstrap, runs, topic=sink) == EXACT | {"out": 1500}


@pytest.mark.chaos  # ~5 min, most of it the alerts' own bound and `for:`: `make chaos`
def test_a_frozen_follower_fires_verify_behind_then_aged_out_and_both_show_after_it_resumes(
        bootstrap, tmp_path, prometheus_binary):  # noqa: F811
    """The follower frozen (SIGSTOP) beside a trigger-0 pipeline whose sink log keeps committed batches
    1 s past its newest 100: the monitor (no follower of its own) reads the lag from the sink log and
    the follower's record, so KafkaEosVerifyBehind fires, then KafkaEosVerifyAgedOut once batches
    leave the log unjudged; resumed (SIGCONT), the follower names the batches that aged out, judges
    the rest, and VerifyBehind clears."""
    source, sink = unique("fa-orders"), unique("fa-priced")
    create_topics(bootstrap, {source: 2, sink: 2})
    runs = {produce_orders(bootstrap, source, 400).run: 400}
    path = follow_pipeline(tmp_path, source, sink, batch=20)
    doc = yaml.safe_load(path.read_text())
    doc["sink"]["evidence_retention_ms"] = 1_000
    path.write_text(yaml.safe_dump(doc))
    checkpoint = tmp_path / "orders-json"
    monitor_port, prometheus_port = free_port(), free_port()
    prometheus = start_prometheus(prometheus_binary, prometheus_config(tmp_path, free_port(), monitor_port),
                                  tmp_path, prometheus_port)
    logs = {name: tmp_path / f"{name}.log" for name in ("monitor", "run", "follow")}
    monitor = start_kafka_eos(["monitor", str(path), "--port", str(monitor_port)], bootstrap, tmp_path, logs["monitor"])
    run = start_kafka_eos(["run", str(path)], bootstrap, tmp_path, logs["run"])
    follower = start_kafka_eos(["verify", "--follow", str(path)], bootstrap, tmp_path, logs["follow"])
    figures: dict[str, float] = {}
    arriving = threading.Event()

    def feed() -> None:
        while not arriving.is_set():
            runs[produce_orders(bootstrap, source, ARRIVING, aborted_every=ARRIVING, aborted_size=2).run] = ARRIVING
            arriving.wait(2.0)
    feeder = threading.Thread(target=feed, daemon=True)
    try:
        wait_line(logs["follow"], r"batch(es)? [\d-]+: \d+ verified", follower, 240)
        wait_until(lambda: value(prometheus_port, 'max(kafka_eos_verify_follow_timestamp_seconds{exporter="monitor"})'),
                   120, "the monitor exports the follower's state")
        follower.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        feeder.start()   # a batch every 2 s or so: fewer than 100 while VerifyBehind's bound runs out
        figures["behind fired"] = fires(prometheus_port, "KafkaEosVerifyBehind", frozen, 300)
        runs[produce_orders(bootstrap, source, 6000).run] = 6000   # ~300 batches of 20: the older ones leave
        figures["aged out fired"] = fires(prometheus_port, "KafkaEosVerifyAgedOut", frozen, 600)
        aged = value(prometheus_port, 'max(kafka_eos_verify_aged_out_batches{exporter="monitor"})')
        follower.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        caught = wait_line(logs["follow"], r"(\d+) committed batch\(es\) after batch (\d+) left the sink log", follower, 60)
        figures["behind cleared"] = cleared(prometheus_port, "KafkaEosVerifyBehind", resumed, 300)
        arriving.set()
        feeder.join(30)
        batches, state = drained_then_stopped(bootstrap, runs, sink, (run, logs["run"]), (follower, logs["follow"]),
                                              checkpoint)
    finally:
        arriving.set()
        follower.send_signal(signal.SIGCONT)
        for proc in (run, follower):
            kill_group(proc)
        monitor.send_signal(signal.SIGTERM)
        monitor.wait(60)
        prometheus.terminate()
        prometheus.wait(30)
    assert order_report(bootstrap, runs, topic=sink) == EXACT | {"out": sum(runs.values())}
    assert state.aged_out == int(caught[1]) > 0 and aged and aged > 0, (state, caught[0], aged)
    assert state.totals["verified"] + state.aged_out == batches[-1] + 1 and "failed" not in state.totals, state
    print(", ".join(f"{what} {seconds:.1f} s" for what, seconds in figures.items()) + " (after the freeze, the resume)"
          + f"; {state.aged_out} batches aged out unverified, named by the resumed follower")
