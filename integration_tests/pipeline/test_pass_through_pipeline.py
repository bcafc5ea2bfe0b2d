"""A YAML pipeline that copies records as they are (bytes in and out, no transform) runs with
offset-range rows: the sink reads and writes the records (issue 27). ``kafka-eos run --once``
twice on one checkpoint: every id once, keys and headers kept, nothing from aborted input, the
progress lines count records (not ranges), the second run resumes."""
from __future__ import annotations

import yaml
from confluent_kafka import Producer

from integration_tests.kafka_tools import (ABORTED_BASE, assert_exactly_once, check_exactly_once, create_topic,
                                           produce, read_all, unique)
from integration_tests.pipeline_cli import kafka_eos, progress_lines, start_kafka_eos
from integration_tests.pipeline_runs import kill_group, tail, wait_for

FIRST, SECOND = 2500, 500


def _produce(bootstrap: str, topic: str, ids: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in ids:
        producer.produce(topic, key=b"k%d" % (i % 7), value=b"%d" % i, headers=[("id", b"%d" % i)])
    producer.flush(30)
    produce(bootstrap, topic, [(b"bad", b"%d" % (ABORTED_BASE + i)) for i in ids[:20]],
            transactional=unique("in-abort"), commit=False)


def _pipeline(tmp_path, source: str, out: str, source_options: dict | None = None,
              sink_options: dict | None = None):
    cluster = {"bootstrap_servers": "${KAFKA_BOOTSTRAP_SERVERS}"}
    doc = {"version": 1, "name": "copy", "source": {"kafka": cluster, "topics": [source], "starting_offsets": "earliest",
                                                     "max_offsets_per_trigger": 1000, "include_headers": True,
                                                     "options": source_options or {}},
           "sink": {"kafka": cluster, "topic": out, "headers_column": "headers", "options": sink_options or {},
                    "transaction_timeout_ms": 300_000},
           "checkpoint": {"location": "${KAFKA_EOS_CHECKPOINTS}/copy"}}
    path = tmp_path / "copy.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _check_copied(bootstrap: str, out: str, ids: int) -> None:
    assert_exactly_once(check_exactly_once(bootstrap, out, ids))
    for message in read_all(bootstrap, out):
        i = int(message.value())
        assert message.key() == b"k%d" % (i % 7) and message.headers() == [("id", b"%d" % i)]


def test_a_copy_pipeline_reads_in_the_sink_exactly_once_with_keys_and_headers(bootstrap, tmp_path):
    source, out = create_topic(bootstrap, unique("copy-in"), 3), create_topic(bootstrap, unique("copy-out"), 2)
    path = _pipeline(tmp_path, source, out)
    _produce(bootstrap, source, range(FIRST))
    first = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert first.code == 0, first.log()
    _produce(bootstrap, source, range(FIRST, FIRST + SECOND))
    second = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert second.code == 0, second.log()
    _check_copied(bootstrap, out, FIRST + SECOND)
    first_counts, second_counts = _counts(progress_lines(first, "copy")), _counts(progress_lines(second, "copy"))
    assert all(read == written for read, written in first_counts + second_counts), first_counts + second_counts
    assert sum(read for read, _ in first_counts) == FIRST, "records, not offset ranges, are counted"
    assert sum(read for read, _ in second_counts) == SECOND, "the second run resumed from the checkpoint"


def _counts(lines: list[str]) -> list[tuple[int, int]]:
    """(read, written) of each progress line ("N in, M out, ..." or "N in, nothing committed")."""
    out = []
    for line in lines:
        parts = line.split(": ", 1)[1].split(", ")
        out.append((int(parts[0].split()[0]), int(parts[1].split()[0]) if parts[1].endswith(" out") else 0))
    return out


def test_a_decided_batch_of_record_rows_resumes_with_range_rows(bootstrap, tmp_path):
    """The upgrade: a checkpoint whose decided batch was written with record rows (emit: records)
    and whose driver died before committing it resumes as a copy pipeline (range rows)."""
    source, out = create_topic(bootstrap, unique("copy-in"), 3), create_topic(bootstrap, unique("copy-out"), 2)
    _produce(bootstrap, source, range(FIRST))
    faults = tmp_path / "faults"
    faults.mkdir()
    path = _pipeline(tmp_path, source, out, {"emit": "records"},
                     {"faultInjection": "after_decision@1", "faultInjectionDir": str(faults)})
    log = tmp_path / "run.log"
    proc = start_kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, log)
    wait_for((faults, "after_decision.*"), proc, 400, log)
    kill_group(proc)
    path = _pipeline(tmp_path, source, out)
    run = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert run.code == 0, run.log() + tail(log)
    _check_copied(bootstrap, out, FIRST)
