"""Late records to a side topic, exactly once, on the real broker and Spark.

The input is keyed and skewed (5 pages on 3 partitions, one partition 3x the others), read with
``max_offsets_per_trigger`` by a 1-minute windowed count with a 30-second watermark. The check is
an exact accounting per window: for every window the watermark closed, the count Spark emitted
plus the records of that window in the late topic equals the committed input records of that
window; nothing of a still-open window is late; every record appears at most once in the late
topic and every window at most once in the output.
"""
from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import fastavro
import pytest
import yaml

from integration_tests.kafka_tools import create_topic, produce, read_all, unique
from integration_tests.pipeline_cli import EXAMPLES, REPO, kafka_eos, progress_lines
from kafka_eos.connectors.spark_harness import python_env

PAGES = {"home": 0, "cart": 0, "search": 1, "help": 1, "about": 2}   # page -> partition
RATE = {"home": 3, "cart": 3, "search": 1, "help": 1, "about": 1}    # clicks per event-time second / 3
T0 = 1_767_225_600_000                                               # 2026-01-01T00:00:00Z, ms
MINUTE = 60_000
DELAY_MS = 30_000
SCHEMA = fastavro.parse_schema(json.loads((EXAMPLES.parent / "schemas" / "click.avsc").read_text()))
SQL = """SELECT value.page AS key,
       named_struct('page', value.page, 'start_ms', unix_millis(window.start), 'views', COUNT(*)) AS value
FROM source
GROUP BY window(event_time, '1 minute'), value.page"""


def _click(page: str, at_ms: int, n: int) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, {"page": page, "user_id": f"u{n}", "clicked_at": at_ms, "referrer": None})
    return out.getvalue()


def seed(bootstrap: str, topic: str, minutes: int, start_minute: int = 0) -> list[tuple[str, int]]:
    """Clicks over ``minutes`` of event time, in time order per page but up to 5 s out of order;
    returns (page, event time ms) of every record, committed in transactions per partition."""
    sent: list[tuple[str, int]] = []
    per_partition: dict[int, list[tuple[bytes, bytes]]] = {}
    for page, partition in PAGES.items():
        step = 1000 * 3 // RATE[page]
        for n, t in enumerate(range(start_minute * MINUTE, (start_minute + minutes) * MINUTE, step)):
            at = T0 + t + (n * 7919) % 5000 - 2500 if t >= 2500 else T0 + t
            per_partition.setdefault(partition, []).append((page.encode(), _click(page, at, n)))
            sent.append((page, at))
    for partition, records in per_partition.items():
        produce(bootstrap, topic, records, transactional=unique("clicks"), partition=partition)
    return sent


def late_pipeline(tmp_path: Path, source: str, sink: str, late: str, max_offsets: int = 600,
                  trigger: str | None = None) -> Path:
    doc = yaml.safe_load((EXAMPLES / "clicks-avro.yaml").read_text())
    doc["name"] = "late-clicks"
    doc["source"]["topics"] = [source]
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "click.avsc")
    doc["source"]["max_offsets_per_trigger"] = max_offsets
    doc["transform"] = {"watermark": {"column": "event_time", "expression": "value.clicked_at",
                                      "delay": "30 seconds", "late_topic": late}, "sql": SQL}
    doc["sink"].update({"topic": sink, "format": "json", "transactional_id_prefix": unique("late")})
    doc["sink"].pop("schema", None)
    if trigger:
        doc["checkpoint"]["trigger"] = trigger
    path = tmp_path / "late-clicks.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def topics(bootstrap: str) -> tuple[str, str, str]:
    names = unique("clicks"), unique("views"), unique("late")
    create_topic(bootstrap, names[0], partitions=3)
    for name in names[1:]:
        create_topic(bootstrap, name, partitions=2)
    return names


def window_of(at_ms: int) -> int:
    return at_ms - at_ms % MINUTE          # Spark's windows start at the epoch (T0 is on a minute)


def clicked_at(value: bytes) -> int:
    return int(fastavro.schemaless_reader(io.BytesIO(value), SCHEMA)["clicked_at"].timestamp() * 1000)


def account(bootstrap: str, sent: list[tuple[str, int]], sink: str, late: str) -> Counter:
    """Assert the exact accounting; return the late records per (page, window start)."""
    views: dict[tuple[str, int], int] = {}
    for message in read_all(bootstrap, sink):
        value = json.loads(message.value())
        key = (value["page"], value["start_ms"])
        assert key not in views, f"window {key} emitted twice"
        views[key] = value["views"]
    late_records = read_all(bootstrap, late)
    where = Counter((m.partition(), dict(m.headers())["kafka-eos.source.offset"]) for m in late_records)
    assert max(where.values(), default=1) == 1, "a record is in the late topic more than once"
    late_per_window = Counter()
    for message in late_records:
        late_per_window[(message.key().decode(), window_of(clicked_at(message.value())))] += 1
    sent_per_window = Counter((page, window_of(at)) for page, at in sent)
    closed_until = max(at for _, at in sent) - DELAY_MS      # the final watermark closes windows ending by it
    for window, count in sent_per_window.items():
        closed = window[1] + MINUTE <= closed_until
        if closed:
            assert views.get(window, 0) + late_per_window[window] == count, \
                f"window {window}: {views.get(window, 0)} counted + {late_per_window[window]} late != {count} sent"
        else:
            assert window not in views and late_per_window[window] == 0, f"open window {window} emitted or late"
    return late_per_window


def iso(ms: int) -> bytes:
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ms // 1000))}.{ms % 1000 * 1000:06d}Z".encode()


def assert_late_headers(bootstrap: str, source: str, late: str) -> None:
    """Every late record names its source topic and partition, its event time, and a watermark past
    it, and keeps its source record's timestamp."""
    source_times = {(m.partition(), m.offset()): m.timestamp() for m in read_all(bootstrap, source)}
    for record in read_all(bootstrap, late):
        headers = dict(record.headers())
        where = (int(headers["kafka-eos.source.partition"]), int(headers["kafka-eos.source.offset"]))
        assert record.timestamp() == source_times[where], "the source record's timestamp"
        assert headers["kafka-eos.source.topic"] == source.encode()
        assert headers["kafka-eos.source.partition"] == str(PAGES[record.key().decode()]).encode()
        assert headers["kafka-eos.event-time"] == iso(clicked_at(record.value())) < headers["kafka-eos.watermark"]


@pytest.mark.matrix
def test_late_topic_gets_exactly_the_records_missing_from_the_windows(bootstrap, tmp_path):
    source, sink, late = topics(bootstrap)
    sent = seed(bootstrap, source, minutes=6)
    sent += seed(bootstrap, source, minutes=1, start_minute=1)        # truly late: minute 1 again, at the end
    path = late_pipeline(tmp_path, source, sink, late)
    run = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cp")
    assert run.code == 0, run.log()
    late_per_window = account(bootstrap, sent, sink, late)
    lines = progress_lines(run, "late-clicks")
    reported = sum(int(n) for l in lines for n in re.findall(r", (\d+) late,", l))
    assert reported == sum(late_per_window.values()) > 0, lines
    assert_late_headers(bootstrap, source, late)
    print(f"late: {sum(late_per_window.values())} of {len(sent)} records, batches: {len(lines)}")

    again = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cp")     # nothing new: nothing twice
    assert again.code == 0, again.log()
    assert account(bootstrap, sent, sink, late) == late_per_window


@pytest.mark.chaos  # `make chaos`: make test keeps the late-topic run, whose late records' headers it checks too
def test_late_record_headers_name_source_event_time_and_watermark(bootstrap, tmp_path):
    source, sink, late = topics(bootstrap)
    sent = seed(bootstrap, source, minutes=4)
    path = late_pipeline(tmp_path, source, sink, late, max_offsets=100_000)
    assert kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cp").code == 0
    assert read_all(bootstrap, late) == []
    old = T0 + 30_000
    produce(bootstrap, source, [(b"help", _click("help", old, 99))], partition=1)   # plain (non-transactional) write
    sent.append(("help", old))
    run = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cp")
    assert run.code == 0, run.log()
    [record] = read_all(bootstrap, late)
    headers = dict(record.headers())
    assert record.key() == b"help" and clicked_at(record.value()) == old
    assert headers["kafka-eos.source.topic"] == source.encode() and headers["kafka-eos.source.partition"] == b"1"
    assert headers["kafka-eos.event-time"] == b"2026-01-01T00:00:30.000000Z"
    watermark_ms = T0 + 4 * MINUTE - DELAY_MS
    assert headers["kafka-eos.watermark"] <= f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(watermark_ms / 1000))}.999999Z".encode()
    assert headers["kafka-eos.watermark"] >= b"2026-01-01T00:03:00"
    account(bootstrap, sent, sink, late)


@pytest.mark.chaos  # `make chaos`: the longer cases (make test keeps the late-topic run)
def test_driver_kills_keep_both_topics_exactly_once(bootstrap, tmp_path):
    source, sink, late = topics(bootstrap)
    sent = seed(bootstrap, source, minutes=6)
    sent += seed(bootstrap, source, minutes=1, start_minute=1)
    path = late_pipeline(tmp_path, source, sink, late, max_offsets=200, trigger="1 second")
    env = {**python_env(), "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_EOS_CHECKPOINTS": str(tmp_path / "cp")}
    for kill_after in (1, 2):          # batch lines of that run, then into the next batch
        log = tmp_path / f"run-{kill_after}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "kafka_eos.connectors.cli", "run", str(path)], env=env,
                                    cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 360
        while sum(l.startswith("kafka-eos late-clicks batch ") for l in log.read_text().splitlines()) < kill_after:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        time.sleep(kill_after * 0.7)                       # somewhere inside the next batch
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    last = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / "cp")
    assert last.code == 0, last.log()
    late_per_window = account(bootstrap, sent, sink, late)
    assert sum(late_per_window.values()) > 0


BURSTS = (0, 3, 6, 9)          # minutes; one minute of clicks every 3 s per page, then two quiet minutes


def seed_bursts(bootstrap: str, topic: str) -> list[tuple[str, int]]:
    sent = []
    for page, partition in (("home", 0), ("search", 1), ("about", 2)):
        clicks = [T0 + b * MINUTE + s * 1000 for b in BURSTS for s in range(0, 60, 3)]
        produce(bootstrap, topic, [(page.encode(), _click(page, at, n)) for n, at in enumerate(clicks)],
                transactional=unique("clicks"), partition=partition)
        sent += [(page, at) for at in clicks]
    return sent


def late_clicks(bootstrap: str, topic: str) -> list[tuple[str, int]]:
    """One click per page in the middle of the first burst, sent after everything else."""
    old = [(page, T0 + 30_000 + n) for n, page in enumerate(("home", "search", "about"))]
    for n, (page, at) in enumerate(old):
        produce(bootstrap, topic, [(page.encode(), _click(page, at, 1000 + n))], partition=n)
    return old


@pytest.mark.chaos  # `make chaos`: the longer cases (make test keeps the late-topic run)
def test_sliding_and_session_windows_account_for_every_record(bootstrap, tmp_path):
    """Sliding windows (2 minutes every minute) and sessions (1-minute gap) over the same bursts, in one
    query each: every closed window or session has its records counted or in the late topic."""
    closed_until = T0 + (BURSTS[-1] + 1) * MINUTE - 3000 - DELAY_MS
    cases = {
        "sliding": ("window(event_time, '2 minutes', '1 minute')", "window",
                    lambda at: [at - at % MINUTE - MINUTE, at - at % MINUTE], 2 * MINUTE),
        "session": ("session_window(event_time, '1 minute')", "session_window",
                    lambda at: [T0 + max(b * MINUTE for b in BURSTS if T0 + b * MINUTE <= at)], None),
    }
    for kind, (call, column, starts_of, length) in cases.items():
        source, sink, late = topics(bootstrap)
        sent = seed_bursts(bootstrap, source)
        (tmp_path / kind).mkdir()
        path = late_pipeline(tmp_path / kind, source, sink, late, max_offsets=100)
        doc = yaml.safe_load(path.read_text())
        doc["transform"]["sql"] = SQL.replace("window(event_time, '1 minute')", call).replace(
            "window.start", f"{column}.start")
        doc["name"] = f"late-{kind}"
        path.write_text(yaml.safe_dump(doc))
        first = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / kind / "cp")
        assert first.code == 0, first.log()
        sent += late_clicks(bootstrap, source)
        second = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path / kind / "cp")
        assert second.code == 0, second.log()

        views = {(json.loads(m.value())["page"], json.loads(m.value())["start_ms"]): json.loads(m.value())["views"]
                 for m in read_all(bootstrap, sink)}
        late_records = [(m.key().decode(), clicked_at(m.value())) for m in read_all(bootstrap, late)]
        assert sorted(late_records) == sorted(sent[-3:]), f"{kind}: exactly the three old clicks are late"
        for page in ("home", "search", "about"):
            windows = Counter(start for p, at in sent if p == page for start in starts_of(at))
            late_in = Counter(start for p, at in late_records if p == page for start in starts_of(at))
            for start, count in windows.items():
                end = start + length if length else max(at for p, at in sent if p == page and
                                                         starts_of(at) == [start]) + MINUTE
                if end <= closed_until:
                    assert views.get((page, start), 0) + late_in[start] == count, (kind, page, start)
