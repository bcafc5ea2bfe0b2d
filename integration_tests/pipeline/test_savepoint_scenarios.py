"""Savepoints (issue 65): the scenarios beyond test_pipeline_savepoint's changed SQL, on the real
broker and Spark (the windowed pipeline and its checks: savepoint_cells).

- twice the shuffle partitions, and RocksDB instead of the default state store: the windowed count
  saved while it runs, restored on a new checkpoint whose query fixes the new setting (its
  offset log records it); every window once and equal to a batch count, late records and
  undecodable ones once;
- a stateless pipeline with a DLQ, saved while it runs and restored with a changed transform (an
  added output column): every id once, the old query's records in the old shape and the new
  query's in the new one, split exactly at the savepoint's end offsets; every undecodable record
  in the DLQ once (before and after the savepoint);
- the driver of `kafka-eos run --from-savepoint` SIGKILLed (its process group) twice during the
  restore's replay (batch 0 of the new checkpoint, its state written: before and after the sink
  decided the batch), then the restore run again: every window once.
- the driver of `kafka-eos run` SIGKILLed while `kafka-eos savepoint` waits for its batch: nothing
  saved (exit 4); `resume`, `run --once`, `savepoint` again, the restore: every window once.

Each prints its figures: windows, records, kills, seconds to savepoint and to restore.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from integration_tests.kafka_tools import check_exactly_once, create_topic, end_offsets, produce, read_all, unique
from integration_tests.pipeline_cli import kafka_eos, small_spark_conf, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail, wait_for
from integration_tests.savepoint_cells import (CHANGED, MINUTE, SQL, T0, Saved, check_restored, more_input,
                                               new_topics, pipeline, pipeline_doc, run_and_save,
                                               save_when_read_through, seed, windows)
from kafka_eos.config.state_backend import PROVIDER_CONF, PROVIDERS, StateBackend
from kafka_eos.connectors.pipeline import restore, savepoint
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.runner import run_query
from kafka_eos.connectors.pipeline.savepoint_check import against
from kafka_eos.connectors.pipeline.savepoint_plan import SHUFFLE_CONF
from kafka_eos.txn.log.savepoints import default_location, read_restore, read_savepoint, taken

TUMBLING = SQL.format(size="1 minute", slide="")


@contextmanager
def session_conf(spark, key: str, value: str) -> Iterator[None]:
    """``key`` set to ``value`` in the shared session inside the block, as it was after it."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def first_conf(checkpoint: Path) -> dict[str, str]:
    """The Spark settings batch 0 of ``checkpoint`` fixed (its offset-log entry)."""
    entry = CheckpointReader(str(checkpoint)).offsets(0)
    assert entry is not None, f"no batch 0 in {checkpoint}"
    return entry.conf()


@pytest.mark.slow  # about 2 minutes each: the old pipeline stopped by the savepoint, the new one replaying
@pytest.mark.chaos  # make chaos KIND=pipeline; make long keeps the stateless restore, make test the refusals
@pytest.mark.parametrize("change", ["shuffle_x2", "rocksdb"])
def test_a_restore_with_another_state_layout_emits_every_window_once(bootstrap, spark, tmp_path, change):
    saved = run_and_save(spark, bootstrap, tmp_path)
    sp, old_shuffle = saved.done.savepoint, int(spark.conf.get(SHUFFLE_CONF))
    assert sp.state["shuffle_partitions"] == str(old_shuffle), sp.state
    assert sp.state["provider"] == PROVIDERS[StateBackend.HDFS], sp.state  # the default of a new checkpoint
    more_input(bootstrap, saved)
    extra = {"state": {"backend": "rocksdb"}} if change == "rocksdb" else None
    new = pipeline(tmp_path, saved.topics, "cp2", TUMBLING, extra=extra)
    code, text = against(new, saved.done.location, offline=False)
    assert code == 0 and "refused" not in text, text
    shuffle = str(2 * old_shuffle if change == "shuffle_x2" else old_shuffle)
    began = time.monotonic()
    with session_conf(spark, SHUFFLE_CONF, shuffle):
        start = restore.prepare(new, saved.done.location)
        result = run_query(spark, new, once=True, emit=lambda _: None)
    restore_s = time.monotonic() - began
    assert result.batches >= 2 and read_restore(str(tmp_path / "cp2")) == start
    conf = first_conf(tmp_path / "cp2")
    assert conf.get(SHUFFLE_CONF) == shuffle, conf
    provider = PROVIDERS[StateBackend.ROCKSDB if change == "rocksdb" else StateBackend.HDFS]
    assert conf.get(PROVIDER_CONF) == provider, conf
    figures = check_restored(bootstrap, saved)
    print(f"savepoint {change}: {figures['windows']} windows over {figures['records']} records ({figures['late']} "
          f"late), {figures['by_old']} emitted by the old query, {figures['by_new']} by the new "
          f"({figures['open']} open at the savepoint); shuffle partitions {old_shuffle} -> {shuffle}, state store "
          f"{sp.state['provider'].rsplit('.', 1)[-1]} -> {provider.rsplit('.', 1)[-1]}; savepoint {saved.save_s:.1f} s, "
          f"restore {restore_s:.1f} s, replay from batch {start.rewind_batch} of {sp.last_batch}")


STATELESS = "SELECT value.page AS key, named_struct('id', value.id, 'page', value.page) AS value FROM source"
STATELESS_CHANGED = ("SELECT value.page AS key, named_struct('id', value.id, 'page', value.page, "
                     "'shout', upper(value.page)) AS value FROM source")


def views(bootstrap: str, topic: str, first: int, n: int) -> list[int]:
    """``n`` views with ids from ``first`` (pages by turns), committed; their ids."""
    pages = ("home", "cart", "help")
    records = [(pages[i % 3].encode(), json.dumps({"id": i, "page": pages[i % 3], "at": i}).encode())
               for i in range(first, first + n)]
    produce(bootstrap, topic, records, transactional=unique("views-in"))
    return list(range(first, first + n))


def poison(bootstrap: str, topic: str, tag: str) -> list[bytes]:
    values = [f"not a view {tag} {k}".encode() for k in range(4)]
    produce(bootstrap, topic, [(b"home" if k % 2 else b"help", v) for k, v in enumerate(values)],
            transactional=unique("poison"))
    return values


@pytest.mark.slow  # about a minute and a half: a stateless pipeline stopped by the savepoint, restored
@pytest.mark.long  # make long (CI, after make test)
def test_a_stateless_pipeline_with_a_dlq_restored_with_a_changed_transform_writes_every_id_once(
        bootstrap, spark, tmp_path):
    topics = {"bootstrap": bootstrap, "in": unique("views"), "out": unique("views-out"), "dlq": unique("views-dlq")}
    create_topic(bootstrap, topics["in"], partitions=2)
    create_topic(bootstrap, topics["out"], partitions=2)
    create_topic(bootstrap, topics["dlq"])
    before = views(bootstrap, topics["in"], 0, 400)
    bad = poison(bootstrap, topics["in"], "before")
    before += views(bootstrap, topics["in"], 400, 200)
    old = pipeline(tmp_path, topics, "cp", STATELESS, prefix=unique("old"), watermark=False)
    lines: list[str] = []
    with ThreadPoolExecutor(1) as pool:
        saving = pool.submit(save_when_read_through, old, lambda: end_offsets(bootstrap, topics["in"]), lines)
        stopped = run_query(spark, old, False, lambda _: None)
        done, save_s = saving.result(timeout=120)
    assert "the run stopped" in lines[-1] and stopped.stopped, (lines, stopped)
    sp = done.savepoint
    assert sp.rewind is None and sp.window == {"kind": "stateless", "size_ms": 0, "slide_ms": 0, "offset_ms": 0}, sp
    after = views(bootstrap, topics["in"], 600, 300)
    bad += poison(bootstrap, topics["in"], "after")
    after += views(bootstrap, topics["in"], 900, 100)

    new = pipeline(tmp_path, topics, "cp2", STATELESS_CHANGED, watermark=False)
    code, text = against(new, done.location, offline=False)
    assert code == 0 and "transform: changed" in text and "nothing to replay (stateless)" in text, text
    began = time.monotonic()
    start = restore.prepare(new, done.location)
    assert start.w0_ms is None and start.rewind == start.end == sp.end, start
    result = run_query(spark, new, once=True, emit=lambda _: None)
    restore_s = time.monotonic() - began
    assert result.batches >= 1

    messages = read_all(bootstrap, topics["out"], "read_committed", idle_s=2.0, timeout_s=120)
    report = check_exactly_once(bootstrap, topics["out"], expected=before + after,
                                id_of=lambda m: json.loads(m.value())["id"])
    assert report.ok, report.line()
    shouted = {json.loads(m.value())["id"] for m in messages if "shout" in json.loads(m.value())}
    assert shouted == set(after), "the new transform wrote exactly the records after the savepoint's end offsets"
    dlq = Counter(m.value() for m in read_all(bootstrap, topics["dlq"], "read_committed", idle_s=2.0, timeout_s=120))
    assert dlq == Counter(bad), f"every undecodable record in the DLQ once: {dlq}"
    print(f"savepoint stateless: {len(before) + len(after)} ids ({len(before)} before the savepoint, {len(after)} "
          f"after), {len(bad)} undecodable in the DLQ once; savepoint {save_s:.1f} s, restore {restore_s:.1f} s")


# batch 0 of the new checkpoint, the replay (it emits nothing: its windows close in the batch after):
# its state written and its offsets planned, the driver killed before and after the sink decided it
KILLS = ("before_decision@0", "after_decision@0")


@pytest.mark.slow  # about 4 minutes: the saved pipeline in-process, then three `kafka-eos run --from-savepoint`
@pytest.mark.chaos
def test_the_driver_killed_during_the_replay_then_the_restore_run_again_emits_every_window_once(
        bootstrap, spark, tmp_path):
    saved = run_and_save(spark, bootstrap, tmp_path)
    sp = saved.done.savepoint
    more_input(bootstrap, saved)
    faults = tmp_path / "faults"
    faults.mkdir()
    doc = pipeline_doc(tmp_path, saved.topics, "cp2", CHANGED,
                       sink_options={"faultInjection": ",".join(KILLS), "faultInjectionDir": str(faults)})
    path = tmp_path / "new.yaml"
    path.write_text(yaml.safe_dump(doc))
    args = ["run", str(path), "--from-savepoint", saved.done.location, "--once", *small_spark_conf()]
    log, checkpoint = tmp_path / "restore.log", tmp_path / "cp2"
    began = time.monotonic()
    for point in KILLS:
        run = start_kafka_eos(args, bootstrap, tmp_path, log)
        try:
            wait_for((faults, point.split("@")[0] + ".*"), run, 240, log)
        finally:
            kill_group(run)
        reader = CheckpointReader(str(checkpoint))
        assert reader.offset_batches() == [0] and not reader.commit_batches(), (
            f"killed at {point} during the replay (batch 0 planned, not committed): {reader.offset_batches()}, "
            f"{reader.commit_batches()}")
    last_began = time.monotonic()
    last = kafka_eos(args, bootstrap, tmp_path)
    assert last.code == 0, last.log() + "\n" + tail(log)
    restore_s, last_s = time.monotonic() - began, time.monotonic() - last_began
    start = read_restore(str(checkpoint))
    assert start is not None and start.rewind_batch is not None
    assert f"replaying from batch {start.rewind_batch}" in log.read_text() + last.stdout, tail(log)
    figures = check_restored(bootstrap, saved)
    print(f"savepoint killed in the replay: {figures['windows']} windows over {figures['records']} records "
          f"({figures['late']} late), {figures['by_old']} emitted by the old query, {figures['by_new']} by the new "
          f"({figures['open']} open at the savepoint); {len(KILLS)} kills ({', '.join(KILLS)}); savepoint "
          f"{saved.save_s:.1f} s, restore {restore_s:.1f} s with the kills ({last_s:.1f} s the last run), replay "
          f"from batch {start.rewind_batch} of {sp.last_batch}")


@pytest.mark.slow  # about 4 minutes: the old pipeline through `kafka-eos run` twice, two savepoints, a restore
@pytest.mark.chaos
def test_the_driver_killed_during_the_savepoint_saves_nothing_until_it_is_taken_again(bootstrap, spark, tmp_path):
    """The run paused in batch 3's commit (after the sink decided it) when `kafka-eos savepoint`
    asks it to stop, then SIGKILLed: the savepoint waits for a batch no run will commit and gives
    up (exit 4), saving nothing; the way on (`resume`, `run --once`, which commits the decided
    batch and reads on, then `savepoint` again) gives a savepoint whose restore emits every window
    once."""
    topics = new_topics(bootstrap)
    sent = seed(bootstrap, topics["in"], 0, T0, T0 + 3 * MINUTE + 20_000)
    bad = [f"not a view {k}".encode() for k in range(6)]
    produce(bootstrap, topics["in"], [(b"home" if k % 2 else b"help", v) for k, v in enumerate(bad)],
            transactional=unique("poison"))
    faults = tmp_path / "faults"
    faults.mkdir()
    doc = pipeline_doc(tmp_path, topics, "cp", TUMBLING, prefix=unique("old"),
                       sink_options={"faultInjection": "after_decision@3", "faultInjectionDir": str(faults)})
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(doc))
    old = pipeline(tmp_path, topics, "cp", TUMBLING, prefix=doc["sink"]["transactional_id_prefix"])
    checkpoint, log = tmp_path / "cp", tmp_path / "old.log"
    run = start_kafka_eos(["run", str(path), *small_spark_conf()], bootstrap, tmp_path, log)
    try:
        wait_for((faults, "after_decision.*"), run, 240, log)  # batch 3 planned and decided, not committed
        with ThreadPoolExecutor(1) as pool:
            saving = pool.submit(kafka_eos, ["savepoint", str(path), "--wait", "20"], bootstrap, tmp_path, 180)
            deadline = time.monotonic() + 60
            while not (checkpoint / "kafka-eos-stop").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert (checkpoint / "kafka-eos-stop").exists(), "the savepoint asked no stop"
            kill_group(run)                                      # the driver killed during the savepoint
            first = saving.result(timeout=180)
    finally:
        kill_group(run)
    assert first.code == 4 and "did not stop" in first.stderr, first.log()
    assert taken(str(checkpoint / "kafka-eos-sink")) is None, "a savepoint was marked while a batch was undecided"
    assert CheckpointReader(str(checkpoint)).commit_batches()[-1] == 2

    assert kafka_eos(["resume", str(path)], bootstrap, tmp_path, 60).code == 0
    again = kafka_eos(["run", str(path), "--once", *small_spark_conf()], bootstrap, tmp_path)
    assert again.code == 0, again.log()
    began = time.monotonic()
    second = kafka_eos(["savepoint", str(path)], bootstrap, tmp_path, 180)
    save_s = time.monotonic() - began
    assert second.code == 0 and "no run was running" in second.stdout, second.log()
    location = default_location(str(checkpoint / "kafka-eos-sink"))
    sp = read_savepoint(location)
    assert sp.last_batch >= 3 and sp.rewind is not None
    emitted_by_old = windows(bootstrap, topics["out"])
    assert emitted_by_old and all(start + MINUTE <= sp.watermark_ms for _, start, _ in emitted_by_old)
    saved = Saved(topics, sent, bad, old, savepoint.Taken(location, sp, True, save_s), save_s, None, [],
                  emitted_by_old, {(p, at - at % MINUTE) for _, p, at in sent if at - at % MINUTE + MINUTE > sp.watermark_ms})
    more_input(bootstrap, saved)
    new = pipeline(tmp_path, topics, "cp2", CHANGED)
    began = time.monotonic()
    start = restore.prepare(new, location)
    run_query(spark, new, once=True, emit=lambda _: None)
    restore_s = time.monotonic() - began
    figures = check_restored(bootstrap, saved)
    print(f"savepoint killed in the savepoint: {figures['windows']} windows over {figures['records']} records "
          f"({figures['late']} late), {figures['by_old']} emitted by the old query, {figures['by_new']} by the new "
          f"({figures['open']} open at the savepoint); 1 kill (after_decision@3, during `kafka-eos savepoint`: exit "
          f"{first.code}); savepoint again {save_s:.1f} s, restore {restore_s:.1f} s, replay from batch "
          f"{start.rewind_batch} of {sp.last_batch}")


@pytest.mark.slow  # about 3 minutes: `kafka-eos run` stopped by `kafka-eos savepoint`, then `run --from-savepoint`
@pytest.mark.chaos  # make chaos KIND=pipeline
def test_the_savepoint_commands_on_a_pipeline_with_its_records_in_kafka_emit_every_window_once(bootstrap, tmp_path):
    """``checkpoint.records: kafka`` (the sink log, the savepoint, the stop request and the restore
    record in the Kafka record store): the windowed count run by `kafka-eos run` and stopped by
    `kafka-eos savepoint` while windows are open, a start of the old checkpoint refused (exit 5),
    `validate --against-savepoint`, then `run --from-savepoint --once` with the changed SQL, all
    through the CLI (``savepoint_cli.save_and_restore``): every window once, late and DLQ once."""
    from integration_tests.savepoint_cli import line, own_cli, save_and_restore
    cli = own_cli(bootstrap, tmp_path)
    figures = save_and_restore(cli, cli, tmp_path, bootstrap, records="kafka")
    assert str(figures["location"]).startswith("kafka:"), f"the savepoint is in the record store: {figures}"
    assert not (tmp_path / "cp" / "kafka-eos-sink").exists(), "records: kafka wrote a sink log in files"
    print(line(figures, "records: kafka"))
