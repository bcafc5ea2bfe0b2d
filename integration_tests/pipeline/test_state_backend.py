"""The state backend (``state.backend``) on the real broker and Spark, in the session's SparkSession.

A 1-minute windowed count per page (30-second watermark) runs ``--once`` on RocksDB: every window
the watermark closed is emitted exactly once with the count of its committed input, and the
checkpoint records RocksDB with changelog files. Restarted with ``backend: hdfs`` it is refused
before anything is written (checkpoint, sink log, output); restarted with no ``state`` key it goes
on with RocksDB, the provider its checkpoint recorded, over new input, still every window once. A
Spark setting of the session contradicting the file is refused before the query is built.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from integration_tests.kafka_tools import check_exactly_once, create_topic, end_offsets, produce, unique
from kafka_eos.config.loader import load_text
from kafka_eos.config.state_backend import PROVIDER_CONF, PROVIDERS, StateBackend
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.runner import PipelineFailed, run_query

T0 = 1_767_225_600_000          # 2026-01-01T00:00:00Z, on a minute
MINUTE = 60_000
PAGES = ("home", "cart", "help")
SCHEMA = {"type": "record", "name": "View", "fields": [
    {"name": "id", "type": "long"}, {"name": "page", "type": "string"}, {"name": "at", "type": "long"}]}
SQL = """SELECT value.page AS key,
       named_struct('page', value.page, 'start_ms', unix_millis(window.start), 'views', COUNT(*)) AS value
FROM source GROUP BY window(event_time, '1 minute'), value.page"""


def seed(bootstrap: str, topic: str, first_id: int, minutes: range) -> list[tuple[str, int]]:
    """One view every 2 s per page over ``minutes`` of event time, committed; (page, event time) of each."""
    sent, records = [], []
    for at in range(T0 + minutes.start * MINUTE, T0 + minutes.stop * MINUTE, 2000):
        for page in PAGES:
            value = {"id": first_id + len(sent), "page": page, "at": at}
            records.append((page.encode(), json.dumps(value).encode()))
            sent.append((page, at))
    produce(bootstrap, topic, records, transactional=unique("views-in"))
    return sent


def pipeline(tmp_path: Path, bootstrap: str, source: str, sink: str, prefix: str, backend: str | None):
    doc = {"version": 1, "name": "state-backend",
           "source": {"kafka": {"bootstrap_servers": bootstrap}, "topics": [source], "starting_offsets": "earliest",
                      "format": "json", "schema": {"inline": SCHEMA}, "max_offsets_per_trigger": 200},
           "transform": {"watermark": {"column": "event_time", "expression": "timestamp_millis(value.at)",
                                       "delay": "30 seconds"}, "sql": SQL},
           "sink": {"kafka": {"bootstrap_servers": bootstrap}, "topic": sink, "format": "json",
                    "transactional_id_prefix": prefix},
           "checkpoint": {"location": str(tmp_path / "cp")}}
    if backend:
        doc["state"] = {"backend": backend}
    cfg, problems = load_text(yaml.safe_dump(doc), "state-backend.yaml")
    assert cfg is not None and not problems, problems
    return cfg


def closed_windows(sent: list[tuple[str, int]]) -> Counter:
    """(page, window start) -> committed views, of the windows the final watermark closed."""
    closed_until = max(at for _, at in sent) - 30_000
    counts = Counter((page, at - at % MINUTE) for page, at in sent)
    return Counter({w: n for w, n in counts.items() if w[1] + MINUTE <= closed_until})


def assert_every_window_once(bootstrap: str, sink: str, sent: list[tuple[str, int]]) -> None:
    def window(message) -> tuple[str, int, int]:
        value = json.loads(message.value())
        return value["page"], value["start_ms"], value["views"]
    expected = [(page, start, n) for (page, start), n in closed_windows(sent).items()]
    report = check_exactly_once(bootstrap, sink, expected=expected, id_of=window)
    assert report.ok, report.line()


def written(location: Path, bootstrap: str, sink: str) -> tuple:
    """Everything a start could write: the checkpoint's files (sink log included) and the output's end."""
    files = sorted(str(p.relative_to(location)) for p in location.rglob("*") if p.is_file())
    return files, end_offsets(bootstrap, sink)


@pytest.mark.matrix  # provider names, the offset log's record and changelog files on every pyspark 4.x
def test_rocksdb_windows_exactly_once_and_a_backend_change_is_refused(bootstrap, spark, tmp_path):
    source, sink, prefix = unique("views"), unique("views-out"), unique("state")
    create_topic(bootstrap, source, partitions=2)
    create_topic(bootstrap, sink, partitions=2)
    sent = seed(bootstrap, source, 0, range(0, 3))
    rocksdb = pipeline(tmp_path, bootstrap, source, sink, prefix, "rocksdb")
    assert run_query(spark, rocksdb, once=True, emit=lambda line: None).batches >= 2
    assert_every_window_once(bootstrap, sink, sent)
    location = tmp_path / "cp"
    assert CheckpointReader(str(location)).latest_offsets().conf()[PROVIDER_CONF] == PROVIDERS[StateBackend.ROCKSDB]
    assert list(location.glob("state/0/*/*.changelog")), "RocksDB runs with changelog checkpointing"

    before = written(location, bootstrap, sink)
    waiting = seed(bootstrap, source, len(sent), range(3, 4))  # input waiting: a start that ran would write
    with pytest.raises(PipelineFailed) as refused:
        run_query(spark, pipeline(tmp_path, bootstrap, source, sink, prefix, "hdfs"), once=True, emit=lambda _: None)
    text = str(refused.value)
    assert "state.backend: hdfs (HDFSBackedStateStoreProvider), but checkpoint" in text, text
    assert "was started with rocksdb (RocksDBStateStoreProvider)" in text and "needs a savepoint" in text, text
    assert refused.value.exit_code == 5
    assert written(location, bootstrap, sink) == before, "the refused start wrote something"
    assert spark.conf.get(PROVIDER_CONF, None) is None, "the session keeps no pipeline's backend"

    sent += waiting + seed(bootstrap, source, len(sent) + len(waiting), range(4, 5))
    resumed = run_query(spark, pipeline(tmp_path, bootstrap, source, sink, prefix, None), once=True,
                        emit=lambda _: None)
    assert resumed.batches >= 1
    assert CheckpointReader(str(location)).latest_offsets().conf()[PROVIDER_CONF] == PROVIDERS[StateBackend.ROCKSDB]
    assert_every_window_once(bootstrap, sink, sent)


def test_a_session_setting_contradicting_the_file_is_refused(bootstrap, spark, tmp_path):
    """A --conf (here set in the session) naming another provider than state.backend: refused, exit 1."""
    source, sink = unique("views"), unique("views-out")
    create_topic(bootstrap, source)
    spark.conf.set(PROVIDER_CONF, PROVIDERS[StateBackend.HDFS])
    try:
        with pytest.raises(PipelineFailed) as refused:
            run_query(spark, pipeline(tmp_path, bootstrap, source, sink, unique("state"), "rocksdb"), once=True,
                      emit=lambda _: None)
    finally:
        spark.conf.unset(PROVIDER_CONF)
    assert f"the Spark session sets {PROVIDER_CONF}=" in str(refused.value) and refused.value.exit_code == 1
    assert not (tmp_path / "cp" / "offsets").exists()
