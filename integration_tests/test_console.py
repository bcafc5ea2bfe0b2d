"""`kafka-eos run --once` prints kafka-eos lines without Spark's routine noise; --verbose shows it.
The quiet run starts as a user's first one does (no class archive: the driver writes one at its
exit, into the archive folder), and the verbose run maps that archive."""
from __future__ import annotations

import os
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


def users_driver_env(archives: Path) -> dict[str, str]:
    """The driver options a user has (the suite's without its class archive), archives in ``archives``."""
    options = [o for o in os.environ.get("SPARK_SUBMIT_OPTS", "").split()
               if "SharedArchiveFile" not in o and not o.startswith("-Xlog:cds")]
    return {"SPARK_SUBMIT_OPTS": " ".join(options), "KAFKA_EOS_JVM_ARCHIVES": str(archives)}


def test_run_is_quiet_by_default_and_verbose_shows_spark(bootstrap, tmp_path):
    archives = tmp_path / "jvm"
    path, source, sink = tiny_pipeline(tmp_path, "quiet")
    create_topics(bootstrap, {source: 1, sink: 1})
    produce_orders(bootstrap, source, 50)
    quiet = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, env=users_driver_env(archives))
    assert quiet.code == 0, quiet.log()
    assert progress_lines(quiet, "orders-json"), quiet.stdout
    output = quiet.stdout + quiet.stderr
    assert not [noise for noise in NOISE + ("[cds]", "SharedArchive") if noise in output], output[-3000:]
    written = sorted(archives.iterdir())
    assert [p.suffix for p in written] == [".jsa"] and written[0].stat().st_size > 1_000_000, written

    path, source, sink = tiny_pipeline(tmp_path, "loud")
    create_topics(bootstrap, {source: 1, sink: 1})
    produce_orders(bootstrap, source, 50)
    loud = kafka_eos(["run", str(path), "--once", "--verbose"], bootstrap, tmp_path, env=users_driver_env(archives))
    assert loud.code == 0, loud.log()
    assert sorted(archives.iterdir()) == written, "the verbose run mapped the archive, wrote no other"
    assert "Using Spark's default log4j profile" in loud.stdout + loud.stderr, loud.log()
