"""What the savepoint tests share (test_pipeline_savepoint, test_savepoint_scenarios): a 1-minute
tumbling windowed count per page (watermark 30 s, a late topic, a DLQ) over skewed pages, its input,
the old pipeline run and saved while it runs, and the checks of a restore against a batch count.

- ``run_and_save``: the topics, 3 min 20 s of input with 6 undecodable records, the old pipeline
  run in the test's SparkSession and saved (``kafka-eos savepoint``'s ``take``) once it read the
  input through; the windows it emitted, those open at the savepoint.
- ``more_input``: 1 min 40 s more of input and 3 late records of a window closed at the savepoint.
- ``check_restored``: every window the final watermark closed equals a batch count over the whole
  input without the late records, each once (read_committed), the old query's with end <= W, the
  new query's all the others; each late record in the late topic once, each undecodable one in the
  DLQ once; the figures of the run.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyspark
import yaml

from integration_tests.kafka_tools import check_exactly_once, create_topic, end_offsets, produce, read_all, unique
from kafka_eos.config.loader import load_text
from kafka_eos.connectors.pipeline import savepoint
from kafka_eos.connectors.pipeline.checkpoint_log import CheckpointReader
from kafka_eos.connectors.pipeline.runner import run_query
from kafka_eos.connectors.pipeline.stop import request_stop
from kafka_eos.offsets import model

T0 = 1_767_225_600_000          # 2026-01-01T00:00:00Z, on a minute
MINUTE = 60_000
WEIGHTS = {"home": 6, "cart": 2, "help": 1}  # views per 2 s: one page far hotter than the others
SCHEMA = {"type": "record", "name": "View", "fields": [
    {"name": "id", "type": "long"}, {"name": "page", "type": "string"}, {"name": "at", "type": "long"}]}
SQL = """SELECT value.page AS key,
       named_struct('page', value.page, 'start_ms', unix_millis(window.start), 'views', COUNT(*)) AS value
FROM source GROUP BY window(event_time, '{size}'{slide}), value.page"""
CHANGED = """SELECT value.page AS key,
       named_struct('page', value.page, 'start_ms', unix_millis(window.start), 'views', COUNT(*),
                    'last_at', MAX(value.at)) AS value
FROM source GROUP BY window(event_time, '1 minute'), value.page"""

Sent = list[tuple[int, str, int]]  # (id, page, event time)
Window = tuple[str, int, int]      # (page, start, views)


def seed(bootstrap: str, topic: str, first_id: int, start_ms: int, stop_ms: int) -> Sent:
    """Views of every page every 2 s of event time in [start_ms, stop_ms), committed."""
    sent: Sent = []
    for at in range(start_ms, stop_ms, 2000):
        for page, n in WEIGHTS.items():
            sent += [(first_id + len(sent), page, at + i) for i in range(n)]
    send(bootstrap, topic, sent)
    return sent


def send(bootstrap: str, topic: str, sent: Sent) -> None:
    records = [(page.encode(), json.dumps({"id": i, "page": page, "at": at}).encode()) for i, page, at in sent]
    produce(bootstrap, topic, records, transactional=unique("views-in"))


def pipeline_doc(tmp_path: Path, topics: dict[str, str], checkpoint: str, sql: str, prefix: str | None = None,
                 watermark: bool = True, extra: dict[str, Any] | None = None,
                 sink_options: dict[str, str] | None = None) -> dict[str, Any]:
    """The pipeline file's content; ``extra``: more top-level sections (``state``), ``sink_options``
    the sink's ``options``."""
    transform: dict = {"sql": sql}
    if watermark:
        transform["watermark"] = {"column": "event_time", "expression": "timestamp_millis(value.at)",
                                  "delay": "30 seconds", "late_topic": topics["late"]}
    sink: dict[str, Any] = {"kafka": {"bootstrap_servers": topics["bootstrap"]}, "topic": topics["out"],
                            "format": "json"}
    if prefix:
        sink["transactional_id_prefix"] = prefix
    if sink_options:
        sink["options"] = dict(sink_options)
    doc = {"version": 1, "name": "savepoint",
           "source": {"kafka": {"bootstrap_servers": topics["bootstrap"]}, "topics": [topics["in"]],
                      "starting_offsets": "earliest", "format": "json", "schema": {"inline": SCHEMA},
                      "max_offsets_per_trigger": 150},
           "transform": transform, "sink": sink,
           "checkpoint": {"location": str(tmp_path / checkpoint), "trigger": "1 second"}, **(extra or {})}
    if "dlq" in topics:
        doc["errors"] = {"on_decode_error": "dlq", "dlq_topic": topics["dlq"]}
    return doc


def pipeline(tmp_path: Path, topics: dict[str, str], checkpoint: str, sql: str, prefix: str | None = None,
             watermark: bool = True, **more: Any):
    """The pipeline of ``pipeline_doc``, loaded as ``kafka-eos run`` loads a file."""
    doc = pipeline_doc(tmp_path, topics, checkpoint, sql, prefix, watermark, **more)
    cfg, problems = load_text(yaml.safe_dump(doc), f"{checkpoint}.yaml")
    assert cfg is not None and not problems, problems
    return cfg


def windows(bootstrap: str, topic: str) -> list[Window]:
    def window(message) -> Window:
        value = json.loads(message.value())
        return value["page"], value["start_ms"], value["views"]
    return [window(m) for m in read_all(bootstrap, topic, "read_committed", idle_s=2.0, timeout_s=120)]


def late_ids(bootstrap: str, topic: str) -> Counter:
    return Counter(json.loads(m.value())["id"] for m in read_all(bootstrap, topic, "read_committed", idle_s=2.0,
                                                                  timeout_s=120))


def expected(sent: Sent, late: Counter) -> list[Window]:
    """The batch computation: each window the final watermark closed, counted over the whole input
    without the records that went to the late topic."""
    closed_until = max(at for _, _, at in sent) - 30_000
    counts = Counter((page, at - at % MINUTE) for i, page, at in sent if i not in late)
    return [(page, start, n) for (page, start), n in counts.items() if start + MINUTE <= closed_until]


def save_when_read_through(cfg, input_ends: Callable[[], dict[int, int]], lines: list[str],
                           timeout_s: float = 180.0):
    """In a thread, while the query runs in the test's: once it committed a batch ending at the
    input's read_committed ends (every partition), take the savepoint; (its result, seconds).
    Failing before, it stops the run (``kafka-eos stop``) so that the test's thread returns."""
    checkpoint = str(cfg.checkpoint.location)
    try:
        read_through(checkpoint, input_ends, timeout_s)
        began = time.monotonic()
        return savepoint.take(cfg, None, pyspark.__version__, lines.append), time.monotonic() - began
    except BaseException:
        request_stop(checkpoint)
        raise


def read_through(checkpoint: str, input_ends: Callable[[], dict[int, int]], timeout_s: float) -> None:
    """Until the checkpoint committed a batch ending at the input's ends (every partition)."""
    deadline, ends = time.monotonic() + timeout_s, {}
    while time.monotonic() < deadline:
        ends = input_ends()  # the commit markers reach the brokers' ends a moment after produce returns
        reader = CheckpointReader(checkpoint)
        committed = reader.commit_batches()
        entry = reader.offsets(committed[-1]) if committed else None
        if entry is not None and {p: o for (_, p), o in model.decode(json.loads(entry.sources[0])).items()} == ends:
            return
        time.sleep(0.5)
    raise AssertionError(f"the input was not read through {ends} within {timeout_s} s")


def written(location: Path, bootstrap: str, topics: dict[str, str]) -> tuple:
    files = sorted(str(p.relative_to(location)) for p in location.rglob("*") if p.is_file())
    return files, len(windows(bootstrap, topics["out"]))


def new_topics(bootstrap: str, partitions: int = 2) -> dict[str, str]:
    """The input and output topics (``partitions`` each), the late topic and the DLQ."""
    topics = {"bootstrap": bootstrap, "in": unique("views"), "out": unique("views-out"), "late": unique("views-late"),
              "dlq": unique("views-dlq")}
    create_topic(bootstrap, topics["in"], partitions=partitions)
    create_topic(bootstrap, topics["out"], partitions=partitions)
    create_topic(bootstrap, topics["late"])
    create_topic(bootstrap, topics["dlq"])
    return topics


@dataclass
class Saved:
    """The old pipeline run and saved (``run_and_save``)."""
    topics: dict[str, str]
    sent: Sent
    poison: list[bytes]
    old: Any                        # its PipelineConfig
    done: savepoint.Taken
    save_s: float
    stopped: Any                    # its RunResult
    lines: list[str]
    emitted_by_old: list[Window]
    open_at_savepoint: set[tuple[str, int]]
    late_new: Sent = field(default_factory=list)


def run_and_save(spark, bootstrap: str, tmp_path: Path, sql: str | None = None, **doc: Any) -> Saved:
    """Steps 1-2 of the module: the old pipeline (``sql``, default the tumbling count; ``doc``: more of
    ``pipeline_doc``'s keywords) run in ``spark`` until the savepoint taken once it read the input
    through stopped it."""
    topics = new_topics(bootstrap)
    sent = seed(bootstrap, topics["in"], 0, T0, T0 + 3 * MINUTE + 20_000)
    poison = [f"not a view {k}".encode() for k in range(6)]  # read before the savepoint, inside its replay
    produce(bootstrap, topics["in"], [(b"home" if k % 2 else b"help", v) for k, v in enumerate(poison)],
            transactional=unique("poison"))
    old = pipeline(tmp_path, topics, "cp", sql or SQL.format(size="1 minute", slide=""), prefix=unique("old"), **doc)
    lines: list[str] = []
    with ThreadPoolExecutor(1) as pool:  # the old pipeline runs (a trigger a second) until the savepoint stops it
        saving = pool.submit(save_when_read_through, old, lambda: end_offsets(bootstrap, topics["in"]), lines)
        stopped = run_query(spark, old, False, lambda _: None)
        done, save_s = saving.result(timeout=120)
    assert "the run stopped" in lines[-1] and stopped.stopped and stopped.batches >= 3, (lines, stopped)
    sp = done.savepoint
    assert sp.rewind is not None and sp.watermark_ms > 0 and sp.last_batch >= 2
    emitted_by_old = windows(bootstrap, topics["out"])
    assert emitted_by_old and all(start + MINUTE <= sp.watermark_ms for _, start, _ in emitted_by_old)
    open_at_savepoint = {(p, at - at % MINUTE) for _, p, at in sent if at - at % MINUTE + MINUTE > sp.watermark_ms}
    assert open_at_savepoint, "windows are open at the savepoint"
    return Saved(topics, sent, poison, old, done, save_s, stopped, lines, emitted_by_old, open_at_savepoint)


def more_input(bootstrap: str, saved: Saved) -> None:
    """Step 3 of the module: more input after the savepoint, 3 late records among it."""
    topics, sent = saved.topics, saved.sent
    saved.late_new = [(10_000_000 + k, "home", T0 + 10_000 + k) for k in range(3)]  # windows closed at the savepoint
    more = seed(bootstrap, topics["in"], len(sent), T0 + 3 * MINUTE + 20_000, T0 + 5 * MINUTE)
    send(bootstrap, topics["in"], saved.late_new)
    sent += more + saved.late_new


def check_restored(bootstrap: str, saved: Saved) -> dict[str, int]:
    """Step 4 of the module (asserts); the figures: windows, records, late, by the old and new query."""
    topics, sent, sp = saved.topics, saved.sent, saved.done.savepoint
    dlq = Counter(m.value() for m in read_all(bootstrap, topics["dlq"], "read_committed", idle_s=2.0, timeout_s=120))
    assert dlq == Counter(saved.poison), f"every undecodable record in the DLQ once, the replay's not again: {dlq}"
    late = late_ids(bootstrap, topics["late"])
    assert all(n == 1 for n in late.values()), f"late records twice: {[i for i, n in late.items() if n > 1]}"
    assert {i for i, _, _ in saved.late_new} <= set(late), "late records of closed windows reach the late topic"
    want = expected(sent, late)
    report = check_exactly_once(bootstrap, topics["out"], expected=want,
                                id_of=lambda m: tuple(json.loads(m.value())[k] for k in ("page", "start_ms", "views")))
    assert report.ok, report.line()
    by_new = Counter(windows(bootstrap, topics["out"])) - Counter(saved.emitted_by_old)
    assert all(start_ms + MINUTE > sp.watermark_ms for _, start_ms, _ in by_new), "the new query emitted a closed window"
    assert {(page, start_ms) for page, start_ms, _ in by_new} >= saved.open_at_savepoint, "a window open at the savepoint"
    return {"windows": len(want), "records": len(sent), "late": len(late), "by_old": len(saved.emitted_by_old),
            "by_new": sum(by_new.values()), "open": len(saved.open_at_savepoint)}
