"""`kafka-eos run --once` prints kafka-eos lines without Spark's routine noise; --verbose shows it."""
from __future__ import annotations

from pathlib import Path

import yaml

from kafka_eos.connectors.demo_data import create_topics, produce_orders
from integration_tests.kafka_tools import unique
from integration_tests.pipeline_cli import EXAMPLES, kafka_eos, progress_lines

NOISE = ("WARN NativeCodeLoader", "Using Spark's default log4j profile", "[Stage")


def tiny_pipeline(tmp_path: Path, name: str) -> tuple[Path, str]:
    source, sink = unique("orders"), unique("priced")
    doc = yaml.safe_load((EXAMPLES / "orders-json.yaml").read_text())
    doc["source"]["topics"], doc["sink"]["topic"] = [source], sink
    doc["source"]["schema"]["file"] = str(EXAMPLES.parent / "schemas" / "order.avsc")
    doc["sink"]["transactional_id_prefix"] = unique(name)
    doc["checkpoint"]["location"] = str(tmp_path / name)
    doc["errors"] = {"on_decode_error": "skip"}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, source, sink


def test_run_is_quiet_by_default_and_verbose_shows_spark(bootstrap, tmp_path):
    path, source, sink = tiny_pipeline(tmp_path, "quiet")
    create_topics(bootstrap, {source: 1, sink: 1})
    produce_orders(bootstrap, source, 50)
    quiet = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path)
    assert quiet.code == 0, quiet.log()
    assert progress_lines(quiet, "orders-json"), quiet.stdout
    output = quiet.stdout + quiet.stderr
    assert not [noise for noise in NOISE if noise in output], output[-3000:]

    path, source, sink = tiny_pipeline(tmp_path, "loud")
    create_topics(bootstrap, {source: 1, sink: 1})
    produce_orders(bootstrap, source, 50)
    loud = kafka_eos(["run", str(path), "--once", "--verbose"], bootstrap, tmp_path)
    assert loud.code == 0, loud.log()
    assert "Using Spark's default log4j profile" in loud.stdout + loud.stderr, loud.log()
