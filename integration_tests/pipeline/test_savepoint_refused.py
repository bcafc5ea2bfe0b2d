"""Savepoints (issue 65): a restore the savepoint cannot carry is refused, through the ``kafka-eos`` CLI
on the real broker and Spark, and writes nothing.

The saved pipeline is savepoint_cells' 1-minute tumbling count per page (watermark 30 s, a late topic,
a DLQ), run over 1 min 40 s of input (windows open at its end) and saved with ``kafka-eos savepoint``.
The new pipelines keep their records in Kafka (``checkpoint.records: kafka``), so that a write to
their record store would show:

- a stream-stream join (a self-join of the source within 2 s of event time, with a watermark: a
  valid file), and an aggregation without a watermark (``SELECT DISTINCT``: a valid file) -
  ``validate --against-savepoint`` exits 1 and ``run --from-savepoint`` exits 1 (``SavepointRefused``,
  docs/runbooks.md), each with one refusal: the state's kind and reason, and the way on once the old
  checkpoint is saved (a pipeline the savepoint carries, or this one on empty state from the
  savepoint's end offsets, given as ``source.starting_offsets``); nothing said to carry over;
- a GROUP BY without a watermark is not a valid pipeline at all: both commands exit 1 naming the
  missing watermark (a windowed aggregation over a watermark is what a restore carries).

After each command: no new checkpoint, nothing new in the output, late and DLQ topics, no record in
the new prefix's record store (the live check's probe record, which ``validate`` and every start
create and delete in it, aside: config.store_check), the old checkpoint's files and the savepoint as
they were; a start of the old checkpoint is still refused (exit 5).

make test runs the stream-stream join (the saved pipeline and that case), make chaos the other two.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient

from integration_tests.kafka_tools import high_watermarks, produce, read_all, unique
from integration_tests.pipeline_cli import kafka_eos, small_spark_conf
from integration_tests.savepoint_cells import MINUTE, SQL, T0, new_topics, pipeline_doc, seed
from kafka_eos.config.loader import load_text
from kafka_eos.connectors.pipeline.runner import run_query
from kafka_eos.txn.log.savepoints import default_location, encode_offsets, read_savepoint
from kafka_eos.txn.log.stores import store_topic

TUMBLING = SQL.format(size="1 minute", slide="")
JOIN = """SELECT a.value.page AS key, named_struct('id', a.value.id, 'other', b.value.id) AS value
FROM source a JOIN source b ON a.value.page = b.value.page
 AND b.event_time BETWEEN a.event_time AND a.event_time + INTERVAL 2 SECONDS"""
DISTINCT = "SELECT DISTINCT value.page AS key, value.page AS value FROM source"
GROUP_BY = """SELECT value.page AS key, named_struct('page', value.page, 'views', COUNT(*)) AS value
FROM source GROUP BY value.page"""
# case: (sql, watermark, what both commands' refusal says)
CASES = {
    "stream_join": (JOIN, True, ("a savepoint cannot carry this pipeline's state (stream_join)",
                                 "emits matches as they are found", "starts no more", "source.starting_offsets")),
    "distinct_no_watermark": (DISTINCT, False, ("a savepoint cannot carry this pipeline's state (no_watermark)",
                                                "never closes", "starts no more", "source.starting_offsets")),
    "group_by_no_watermark": (GROUP_BY, False, ("a streaming aggregation (GROUP BY) needs a watermark",
                                                "add transform.watermark")),
}


@dataclass
class Saved:
    topics: dict[str, str]
    old_path: Path
    checkpoint: Path
    location: str
    save_s: float


@pytest.fixture(scope="module")
def saved(bootstrap, spark, tmp_path_factory) -> Saved:
    """The tumbling count run over 1 min 40 s of input in the session's Spark, saved by the CLI."""
    tmp = tmp_path_factory.mktemp("refused")
    topics = new_topics(bootstrap)
    seed(bootstrap, topics["in"], 0, T0, T0 + MINUTE + 40_000)
    produce(bootstrap, topics["in"], [(b"home", b"not a view")], transactional=unique("poison"))
    doc = pipeline_doc(tmp, topics, "cp", TUMBLING, prefix=unique("old"))
    doc["source"]["max_offsets_per_trigger"] = 1000  # the input in one batch: a refusal needs no more
    old_path = tmp / "old.yaml"
    old_path.write_text(yaml.safe_dump(doc))
    old, problems = load_text(yaml.safe_dump(doc), "old.yaml")
    assert old is not None and not problems, problems
    began = time.monotonic()
    run_query(spark, old, once=True, emit=lambda _: None)
    run_s = time.monotonic() - began
    began = time.monotonic()
    save = kafka_eos(["savepoint", str(old_path)], bootstrap, tmp, 180)
    save_s = time.monotonic() - began
    assert save.code == 0, save.log()
    location = default_location(str(tmp / "cp" / "kafka-eos-sink"))
    assert location in save.stdout and read_savepoint(location).rewind is not None, save.log()
    print(f"the saved pipeline: run {run_s:.1f} s, `kafka-eos savepoint` {save_s:.1f} s")
    return Saved(topics, old_path, tmp / "cp", location, save_s)


def new_file(saved: Saved, tmp_path: Path, case: str) -> tuple[Path, str]:
    """The refused pipeline's file (records in Kafka, a prefix of its own) and that prefix."""
    sql, watermark, _ = CASES[case]
    prefix = unique("new")
    doc = pipeline_doc(tmp_path, saved.topics, "cp2", sql, prefix=prefix, watermark=watermark)
    doc["checkpoint"]["records"] = "kafka"
    path = tmp_path / "new.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, prefix


def store_records(bootstrap: str, prefix: str) -> tuple[dict[str, bytes], set[str]]:
    """The new prefix's record store topic: its live records (key -> value, a tombstone deletes) and
    every key ever written to it (empty when the topic does not exist)."""
    topic = store_topic(prefix)
    if topic not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics:
        return {}, set()
    live: dict[str, bytes] = {}
    keys: set[str] = set()
    for m in read_all(bootstrap, topic, "read_committed", idle_s=2.0, timeout_s=30):
        key = (m.key() or b"").decode(errors="replace")
        keys.add(key)
        if m.value() is None:
            live.pop(key, None)
        else:
            live[key] = m.value()
    return live, keys


def everything_written(bootstrap: str, saved: Saved, prefix: str) -> dict:
    """What a command could have written: the old checkpoint's files, the savepoint, the topics' ends,
    the new prefix's record store (its live records; a key other than the live check's probe)."""
    files = {str(p.relative_to(saved.checkpoint)): p.stat().st_size for p in saved.checkpoint.rglob("*")
             if p.is_file()}
    ends = {name: high_watermarks(bootstrap, saved.topics[name]) for name in ("out", "late", "dlq")}
    live, keys = store_records(bootstrap, prefix)
    # validate and every start probe a record store (config.store_check: create, read, delete a
    # _probe record): that deleted probe is the only key a refused command may leave
    others = sorted(k for k in keys if not k.rsplit("/", 1)[-1].startswith("_probe-"))
    return {"old checkpoint": files, "savepoint": read_savepoint(saved.location), "topics": ends,
            "store records": live, "store keys other than the probe": others}


@pytest.mark.parametrize("case", [pytest.param(case, marks=() if case == "stream_join" else pytest.mark.chaos)
                                  for case in sorted(CASES)])
def test_a_restore_the_savepoint_cannot_carry_is_refused_by_validate_and_run_and_writes_nothing(
        bootstrap, saved, tmp_path, case):
    path, prefix = new_file(saved, tmp_path, case)
    before = everything_written(bootstrap, saved, prefix)
    assert not before["store records"] and not before["store keys other than the probe"], before

    validate = kafka_eos(["validate", str(path), "--against-savepoint", saved.location], bootstrap, tmp_path, 120)
    assert everything_written(bootstrap, saved, prefix) == before, "validate wrote"
    run = kafka_eos(["run", str(path), "--from-savepoint", saved.location, "--once", *small_spark_conf()],
                    bootstrap, tmp_path, 300)
    assert everything_written(bootstrap, saved, prefix) == before, "run --from-savepoint wrote"
    old = kafka_eos(["run", str(saved.old_path), "--once", *small_spark_conf()], bootstrap, tmp_path, 300)

    says = CASES[case][2]
    for name, done in (("validate", validate), ("run --from-savepoint", run)):
        assert done.code == 1, f"{name}: exit {done.code}\n{done.log()}"
        assert all(text in done.stderr for text in says), f"{name} does not say {says}:\n{done.log()}"
        assert "nothing was started" in done.stderr or name == "validate", done.log()
        assert "carries over" not in done.stdout + done.stderr, f"{name} says something carries over:\n{done.log()}"
        assert "Keep the checkpoint unchanged" not in done.stderr, f"{name}: no way on once saved\n{done.log()}"
    if "source.starting_offsets" in says:  # the way on: empty state from where the saved pipeline stopped
        ends = json.dumps(encode_offsets(read_savepoint(saved.location).end))
        assert ends in validate.stderr and ends in run.stderr, validate.log()
        line = [text for text in validate.stderr.splitlines() if "refused: " in text]
        assert len(line) == 1 and line[0].split("refused: ", 1)[1] in run.stderr, "validate and run say the same"
    assert old.code == 5 and saved.location in old.stderr, old.log()

    assert not (tmp_path / "cp2").exists(), "a refused restore wrote the new checkpoint"
    after = everything_written(bootstrap, saved, prefix)
    assert after == before, f"a refused restore wrote something: {before} -> {after}"
    print(f"savepoint refused ({case}): validate exit {validate.code}, run --from-savepoint exit {run.code}, "
          f"the old checkpoint's start exit {old.code}; nothing written (savepoint {saved.save_s:.1f} s)")
