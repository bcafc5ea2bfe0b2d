"""One store cell (issue 63): a YAML pipeline whose checkpoint (Spark's and kafka-eos's records) is
on the store under test, run with `kafka-eos run` as users run it: killed after batch 1's decision
and after batch 3's EndTxn round, each restart recovering; every order exactly once in the
read_committed output, nothing of the aborted input transactions; `verify` passes every committed
batch; `stop` holds a start, `resume` lets the next run go on, and a running pipeline with input
arriving stops on `kafka-eos stop` from another process (exit 0, after its running batch), exactly
once again. With
``Store.records`` the pipeline file sets ``checkpoint.records`` (``kafka``: the records in a topic)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import kafka_eos, orders_pipeline, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from integration_tests.pipeline.test_verify_recompute import verify
from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from kafka_eos.config.loader import load_file
from kafka_eos.config.records import register_records, sink_log_location
from kafka_eos.txn.log import stores
from kafka_eos.txn.log.sink_log import SinkLogReader

EXACT = {"duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
KILLS = ("after_decision@1", "after_end_txns@3")


@dataclass
class Store:
    """Where the cell's checkpoints go: ``checkpoints`` (a path or URI, given to the pipeline as
    ``KAFKA_EOS_CHECKPOINTS``), the environment and Spark settings that reach it, and what
    ``validate`` must say of it."""
    checkpoints: str
    env: dict[str, str] = field(default_factory=dict)
    conf: list[str] = field(default_factory=list)
    says: str = ""
    records: str | None = None  # checkpoint.records of the pipeline file (None: unset, the checkpoint)


def pipeline_file(tmp_path: Path, topics: tuple[str, str], records: str | None = None, **sink_options: str) -> Path:
    """orders-json.yaml at its default timeouts on topics of its own, batches of 100, a 1 s trigger."""
    path = orders_pipeline(tmp_path, topics, "store", 100, "1 second", {"options": sink_options})
    if records is not None:
        doc = yaml.safe_load(path.read_text())
        doc["checkpoint"]["records"] = records
        path.write_text(yaml.safe_dump(doc))
    return path


def sink_log_batches(path: str, env: dict[str, str]) -> list[int]:
    """The batch ids of the pipeline's sink log, read where the pipeline keeps it."""
    cfg, problems = load_file(path, {**os.environ, **env})
    assert cfg is not None and not problems, problems
    register_records(cfg)
    where = sink_log_location(cfg)
    assert where is not None
    try:
        return SinkLogReader(where[1]).batch_ids()
    finally:
        stores.forget_clusters()  # a Kafka store's view: no client left behind the broker's end


def spark_defaults(tmp_path: Path, conf: list[str]) -> dict[str, str]:
    """A Spark conf folder whose spark-defaults.conf holds ``conf`` (``--conf k=v`` pairs), as a
    platform configures its connectors for every Spark process: the run's, and the JVM that a
    command of a pipeline with records in Kafka starts to read the checkpoint (``status``)."""
    folder = tmp_path / "spark-conf"
    folder.mkdir(exist_ok=True)
    pairs = [arg.split("=", 1) for arg in conf if arg != "--conf"]
    (folder / "spark-defaults.conf").write_text("".join(f"{key} {value}\n" for key, value in pairs))
    return {"SPARK_CONF_DIR": str(folder)} if pairs else {}


def run_cell(bootstrap: str, tmp_path: Path, store: Store) -> dict[str, int]:
    env = {**store.env, "KAFKA_EOS_CHECKPOINTS": store.checkpoints, **spark_defaults(tmp_path, store.conf)}
    topics = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {topics[0]: 3, topics[1]: 3})
    first = produce_orders(bootstrap, topics[0], 600, aborted_every=200, aborted_size=5)
    faults = tmp_path / "faults"
    faults.mkdir()
    path = str(pipeline_file(tmp_path, topics, store.records, faultInjection=",".join(KILLS),
                             faultInjectionDir=str(faults)))

    def cli(args: list[str], timeout: float = 500):
        return kafka_eos(args, bootstrap, tmp_path, timeout=timeout, env=env)

    checked = cli(["validate", path], 120)
    assert checked.code == 0, checked.log()
    assert store.says in checked.stdout + checked.stderr, checked.log()
    log = tmp_path / "run.log"
    for point in KILLS:
        run = start_kafka_eos(["run", path, "--once", *store.conf], bootstrap, tmp_path, log, env=env)
        try:
            wait_for((faults, point.split("@")[0] + ".*"), run, 300, log)
        finally:
            kill_group(run)
    began = time.monotonic()
    last = cli(["run", path, "--once", *store.conf])
    assert last.code == 0, last.log()
    recovered_s = time.monotonic() - began
    assert order_report(bootstrap, {first.run: 600}, topics[1]) == EXACT | {"out": 600}, last.log()

    code, report = verify(path, bootstrap, tmp_path, env=env)
    assert code == 0 and report["per_batch"], report
    last_batch = max(b["batch"] for b in report["per_batch"])
    status = cli(["status", path], 180)  # reads Spark's checkpoint where it is, from a process of its own
    assert status.code in (0, 1) and f"last committed batch {last_batch}" in status.stdout, status.log()
    stop = cli(["stop", path], 60)
    assert stop.code == 0, stop.log()
    held = cli(["run", path, "--once", *store.conf], 120)
    assert held.code == 0 and "a stop was requested" in held.stderr, held.log()
    assert cli(["resume", path], 60).code == 0
    running = tmp_path / "running.log"
    run = start_kafka_eos(["run", path, *store.conf], bootstrap, tmp_path, running, env=env)
    try:  # a running pipeline, input arriving, stopped from another process: exit 0 after its batch
        second = produce_orders(bootstrap, topics[0], 200, aborted_every=200, aborted_size=5)
        runs = {first.run: 600, second.run: 200}
        deadline = time.monotonic() + 300
        while order_report(bootstrap, runs, topics[1])["out"] < 800:
            assert run.poll() is None and time.monotonic() < deadline, tail(running)
            time.sleep(2)
        assert cli(["stop", path], 60).code == 0
        assert run.wait(180) == 0, tail(running)
    finally:
        kill_group(run)
    assert "stopped after batch" in running.read_text(), tail(running)
    assert order_report(bootstrap, runs, topics[1]) == EXACT | {"out": 800}, tail(running)
    batches = sink_log_batches(path, {**env, "KAFKA_BOOTSTRAP_SERVERS": bootstrap})
    return {"ids": 800, "kills": len(KILLS), "batches": len(batches), "last_run_s": round(recovered_s)}
