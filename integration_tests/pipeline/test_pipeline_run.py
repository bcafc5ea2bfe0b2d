"""`kafka-eos run` on the shipped example pipelines, unchanged, against the real broker and Spark.

The examples name fixed topics (orders, orders-priced, orders-dlq; clicks, page-views). Every
test writes ids of its own run (``<run>-<i>``) and counts only those, so tests that share an
example's topics cannot disturb each other's counts.
"""
from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import fastavro
import pytest

from kafka_eos.connectors.demo_data import count_ids, create_topics, order_report, produce_orders, read_committed
from integration_tests.kafka_tools import produce, unique
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, progress_lines

ORDER_TOPICS = {"orders": 3, "orders-priced": 3, "orders-dlq": 1}
HEADERS = ("kafka-eos.error", "kafka-eos.source.topic", "kafka-eos.source.partition", "kafka-eos.source.offset")


def poison_positions(bootstrap: str, runs: list[str]) -> dict[str, tuple[int, int]]:
    """key -> (partition, offset) of the poison records of ``runs`` in orders."""
    return {m.key().decode(): (m.partition(), m.offset()) for m in read_committed(bootstrap, "orders")
            if m.key() and any(m.key().decode().startswith(f"{run}-poison-") for run in runs)}


def check_dlq(bootstrap: str, positions: dict[str, tuple[int, int]]) -> None:
    """Each poison record is in orders-dlq exactly once, as written, with headers naming where it was."""
    ours = [m for m in read_committed(bootstrap, "orders-dlq") if m.key() and m.key().decode() in positions]
    assert count_ids([m.key().decode() for m in ours], list(positions)) == \
        {"out": len(positions), "duplicates": 0, "missing": 0, "unexpected": 0}
    for message in ours:
        headers = {k: v.decode() for k, v in message.headers()}
        assert set(HEADERS) <= set(headers), headers
        partition, offset = positions[message.key().decode()]
        assert (headers["kafka-eos.source.topic"], headers["kafka-eos.source.partition"],
                headers["kafka-eos.source.offset"]) == ("orders", str(partition), str(offset))
        assert headers["kafka-eos.error"], "the error header says why the record failed"
        assert message.value() == b"{not json"


@pytest.mark.matrix
def test_json_example_exactly_once_with_poison_records_in_the_dlq(bootstrap, tmp_path):
    """Run orders-json.yaml twice on one checkpoint; the second run sees new input only."""
    create_topics(bootstrap, ORDER_TOPICS)
    first = produce_orders(bootstrap, "orders", 6000, poison=3, aborted_every=2500, aborted_size=50)
    run = kafka_eos(["run", str(EXAMPLES / "orders-json.yaml"), "--once"], bootstrap, tmp_path)
    assert run.code == 0, run.log()
    lines = progress_lines(run, "orders-json")
    assert lines and all(" in, " in l and " to DLQ, " in l and "commit " in l for l in lines), run.stdout
    assert order_report(bootstrap, {first.run: 6000}) == \
        {"out": 6000, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
    check_dlq(bootstrap, poison_positions(bootstrap, [first.run]))

    second = produce_orders(bootstrap, "orders", 2000, poison=1, aborted_every=1000, aborted_size=20)
    again = kafka_eos(["run", str(EXAMPLES / "orders-json.yaml"), "--once"], bootstrap, tmp_path)
    assert again.code == 0, again.log()
    assert order_report(bootstrap, {first.run: 6000, second.run: 2000}) == \
        {"out": 8000, "duplicates": 0, "missing": 0, "unexpected": 0, "wrong_total": 0}
    check_dlq(bootstrap, poison_positions(bootstrap, [first.run, second.run]))
    read = sum(int(l.split(": ", 1)[1].split(" in")[0]) for l in progress_lines(again, "orders-json"))
    assert read < 6000, f"the second run resumed from the checkpoint, not from the start: {read} records read"


# ---- Avro: clicks-avro.yaml (windowed page views per minute, on_decode_error: skip) ----

CLICK_SCHEMA = fastavro.schema.load_schema(str(EXAMPLES.parent / "schemas" / "click.avsc"))
VIEWS_SCHEMA = fastavro.schema.load_schema(str(EXAMPLES.parent / "schemas" / "page_views.avsc"))
PAGES = ("home", "cart", "checkout")
START = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def click(page: str, user: str, at: datetime) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, CLICK_SCHEMA, {"page": page, "user_id": user, "clicked_at": at, "referrer": None})
    return out.getvalue()


def expected_views(minute: int, page_index: int) -> int:
    return 1 + (minute * 7 + page_index * 3) % 5


@pytest.mark.chaos  # `make chaos`: make test keeps windows and the late topic (test_late_records) and Avro
# by schema id (test_registry_pipeline)
def test_avro_example_emits_each_closed_window_exactly_once(bootstrap, tmp_path):
    create_topics(bootstrap, {"clicks": 2, "page-views": 2, "clicks-late": 1})
    run_id = unique("avro")
    pages = [f"{run_id}-{p}" for p in PAGES]
    clicks = [(page.encode(), click(page, f"user-{n}", START + timedelta(minutes=minute, seconds=n)))
              for minute in range(4) for i, page in enumerate(pages) for n in range(expected_views(minute, i))]
    produce(bootstrap, "clicks", clicks, transactional=unique("clicks"))
    produce(bootstrap, "clicks", [(b"x", click(f"{run_id}-aborted", "u", START))] * 20,
            transactional=unique("clicks-abort"), commit=False)
    produce(bootstrap, "clicks", [(b"bad-1", b""), (b"bad-2", b"\x02")])  # not Avro: skipped and counted
    # a late click moves the watermark (delay 1 minute) past the four windows above
    produce(bootstrap, "clicks", [(b"late", click(pages[0], "late", START + timedelta(minutes=10)))],
            transactional=unique("clicks"))

    run = kafka_eos(["run", str(EXAMPLES / "clicks-avro.yaml"), "--once"], bootstrap, tmp_path)
    assert run.code == 0, run.log()
    assert any("2 skipped" in l for l in progress_lines(run, "page-views-avro")), run.stdout

    views = [fastavro.schemaless_reader(io.BytesIO(m.value()), VIEWS_SCHEMA, None)
             for m in read_committed(bootstrap, "page-views")]
    ours = sorted(((v["page"], v["window_start"], v["views"]) for v in views if v["page"].startswith(run_id)))
    expected = sorted((page, START + timedelta(minutes=minute), expected_views(minute, i))
                      for minute in range(4) for i, page in enumerate(pages))
    assert ours == expected, "each closed window exactly once, with its count; none from the aborted input"

    # a click for a window already closed goes to the late topic, once
    produce(bootstrap, "clicks", [(b"old", click(pages[1], "old", START + timedelta(seconds=5)))],
            transactional=unique("clicks"))
    again = kafka_eos(["run", str(EXAMPLES / "clicks-avro.yaml"), "--once"], bootstrap, tmp_path)
    assert again.code == 0, again.log()
    late = [m for m in read_committed(bootstrap, "clicks-late") if m.key() == b"old"
            and fastavro.schemaless_reader(io.BytesIO(m.value()), CLICK_SCHEMA, None)["page"] == pages[1]]
    assert len(late) == 1, "the late click is in the late topic exactly once"


@pytest.fixture
def fail_pipeline(tmp_path: Path) -> tuple[Path, str, str]:
    """orders-json.yaml on topics of its own with ``on_decode_error: fail``."""
    import yaml
    topics = (unique("orders"), unique("priced"))
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [topics[0]], topics[1]
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["sink"]["transactional_id_prefix"] = unique("fail")
    doc["errors"] = {"on_decode_error": "fail"}
    path = tmp_path / "orders-fail.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, *topics


@pytest.mark.chaos  # `make chaos`: three runs; make test keeps the DLQ policy (the JSON example)
def test_fail_policy_stops_at_the_bad_record_and_commits_nothing_of_its_batch(bootstrap, tmp_path, fail_pipeline):
    path, source, sink = fail_pipeline
    create_topics(bootstrap, {source: 1, sink: 1})
    data = produce_orders(bootstrap, source, 300, poison=1, aborted_every=1000)
    (position,) = [m.offset() for m in read_committed(bootstrap, source) if m.key().decode().endswith("-poison-0")]
    run = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert run.code == 5, run.log()  # every restart stops at the same record: a person must decide
    assert f"record {source}-0@{position} failed to decode" in run.stderr, run.log()
    assert "set errors.on_decode_error to skip (keeps this checkpoint)" in run.stderr
    assert read_committed(bootstrap, sink) == [], "nothing of the failed batch reached the output"

    # a DLQ plan scans the source twice: the run refuses to resume this checkpoint with it
    import yaml
    doc = yaml.safe_load(path.read_text())
    doc["errors"] = {"on_decode_error": "dlq", "dlq_topic": unique("dlq")}
    path.write_text(yaml.safe_dump(doc))
    refused = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert refused.code == 5 and "errors.on_decode_error: dlq cannot resume checkpoint" in refused.stderr, \
        refused.log()
    assert "There are [1] sources" not in refused.stderr, "refused before Spark started the query"

    # the other fix the error names: skip; the rerun resumes, skips (and names) the bad record only
    doc["errors"] = {"on_decode_error": "skip"}
    path.write_text(yaml.safe_dump(doc))
    rerun = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert rerun.code == 0, rerun.log()
    assert any("1 skipped" in l for l in progress_lines(rerun, "orders-json")), rerun.stdout
    assert f"{source}-0@{position} (" in rerun.stderr, "the skipped record is named in the log"
    out = count_ids([json.loads(m.value())["order_id"] for m in read_committed(bootstrap, sink)],
                    [f"{data.run}-{i}" for i in range(300)])
    assert out == {"out": 300, "duplicates": 0, "missing": 0, "unexpected": 0}
