"""Issue 63: a pipeline whose checkpoint is on a FUSE mount of object storage (s3fs over moto's S3
server on loopback: a path without hard links, whose rename copies the object, as Databricks'
/dbfs and /Volumes, gcsfuse and blobfuse are). Spark's checkpoint and kafka-eos's own records
(sink log, stop request, shapes, sweeps) both live on the mount.

Before the fix the first batch failed at the sink log's first record (``os.link``: EOPNOTSUPP).
Now: ``validate`` probes the location and says how records are made create-only there; the
pipeline runs `kafka-eos run` as users do, killed after batch 1's decision and after batch 3's
EndTxn round, each restart recovering; every order exactly once in the read_committed output,
nothing of the aborted input transactions; `verify` passes every committed batch; `stop` holds
a start, `resume` lets the next run go on, exactly once again."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from integration_tests.kafka_tools import unique
from integration_tests.object_stores import create_bucket, fuse_mount, s3_server
from integration_tests.pipeline_cli import kafka_eos, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, wait_for
from integration_tests.test_supervised_guards import pipeline_file
from integration_tests.test_verify_recompute import verify
from kafka_eos.connectors.demo_data import create_topics, order_report, produce_orders
from kafka_eos.txn.sink_log import SinkLogReader

EXACT = {"duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
KILLS = ("after_decision@1", "after_end_txns@3")


@pytest.fixture(scope="module")
def mount(tmp_path_factory) -> Path:
    with s3_server() as endpoint:
        create_bucket(endpoint, "checkpoints")
        with fuse_mount(endpoint, "checkpoints", tmp_path_factory.mktemp("fuse") / "mnt") as where:
            yield where


def _no_hard_links(where: Path) -> None:
    (where / "a").write_text("a")
    with pytest.raises(OSError) as refused:
        os.link(where / "a", where / "b")
    assert refused.value.errno in (errno.EOPNOTSUPP, errno.EPERM), refused.value
    (where / "a").unlink()


@pytest.mark.matrix
def test_a_checkpoint_on_a_fuse_mount_without_hard_links_is_exactly_once_through_driver_kills(bootstrap, tmp_path,
                                                                                               mount, record_property):
    _no_hard_links(mount)
    checkpoints = mount / unique("ck")
    topics = (unique("orders"), unique("priced"))
    create_topics(bootstrap, {topics[0]: 3, topics[1]: 3})
    first = produce_orders(bootstrap, topics[0], 600, aborted_every=200, aborted_size=5)
    faults = tmp_path / "faults"
    faults.mkdir()
    path = pipeline_file(tmp_path, topics, faultInjection=",".join(KILLS), faultInjectionDir=str(faults))

    checked = kafka_eos(["validate", str(path)], bootstrap, checkpoints, timeout=120)
    assert checked.code == 0, checked.log()
    assert "create-only by checked (no hard links" in checked.stdout + checked.stderr, checked.log()

    log = tmp_path / "run.log"
    for point in KILLS:
        run = start_kafka_eos(["run", str(path), "--once"], bootstrap, checkpoints, log)
        try:
            wait_for((faults, point.split("@")[0] + ".*"), run, 300, log)
        finally:
            kill_group(run)
    last = kafka_eos(["run", str(path), "--once"], bootstrap, checkpoints)
    assert last.code == 0, last.log()
    assert order_report(bootstrap, {first.run: 600}, topics[1]) == EXACT | {"out": 600}, last.log()

    sink_log = str(checkpoints / "orders-json" / "kafka-eos-sink")
    code, report = verify(str(path), bootstrap, checkpoints)
    assert code == 0 and report["per_batch"], report
    batches = SinkLogReader(sink_log).batch_ids()

    stop = kafka_eos(["stop", str(path)], bootstrap, checkpoints, timeout=60)
    assert stop.code == 0, stop.log()
    held = kafka_eos(["run", str(path), "--once"], bootstrap, checkpoints, timeout=120)
    assert held.code == 0 and "a stop was requested" in held.stderr, held.log()
    assert kafka_eos(["resume", str(path)], bootstrap, checkpoints, timeout=60).code == 0
    second = produce_orders(bootstrap, topics[0], 200, aborted_every=200, aborted_size=5)
    again = kafka_eos(["run", str(path), "--once"], bootstrap, checkpoints)
    assert again.code == 0, again.log()
    assert order_report(bootstrap, {first.run: 600, second.run: 200}, topics[1]) == EXACT | {"out": 800}, again.log()
    for name, value in (("ids", 800), ("kills", len(KILLS)), ("batches", len(SinkLogReader(sink_log).batch_ids()))):
        record_property(name, value)
    print(f"FUSE store: 800 orders exactly once, {len(KILLS)} driver kills, batches {batches[0]}-{batches[-1]} "
          f"verified, {len(SinkLogReader(sink_log).batch_ids())} batches in all")
