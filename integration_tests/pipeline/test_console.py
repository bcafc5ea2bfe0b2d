"""`kafka-eos run --once` prints kafka-eos lines without Spark's routine noise; --verbose shows it.
The quiet run starts as a user's first one does (no class archive: the driver writes one at its
exit, into the archive folder; no SPARK_HOME and no compiled Spark home: the run builds one in its
cache folder), and the verbose run maps that archive and builds no other home."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
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


def users_driver_env(archives: Path, homes: Path) -> dict[str, str]:
    """The driver options a user has (the suite's without its class archive, no SPARK_HOME),
    archives in ``archives``, compiled Spark homes in ``homes``."""
    options = [o for o in os.environ.get("SPARK_SUBMIT_OPTS", "").split()
               if "SharedArchiveFile" not in o and not o.startswith("-Xlog:cds")]
    return {"SPARK_SUBMIT_OPTS": " ".join(options), "KAFKA_EOS_JVM_ARCHIVES": str(archives), "SPARK_HOME": "",
            "KAFKA_EOS_SPARK_HOME_CACHE": str(homes)}


@pytest.mark.long  # minutes: make long (CI, after make test)
def test_run_is_quiet_by_default_and_verbose_shows_spark(bootstrap, tmp_path):
    archives, homes = tmp_path / "jvm", tmp_path / "spark-homes"
    path, source, sink = tiny_pipeline(tmp_path, "quiet")
    create_topics(bootstrap, {source: 1, sink: 1})
    produce_orders(bootstrap, source, 50)
    quiet = kafka_eos(["run", str(path), "--once"], bootstrap, tmp_path, env=users_driver_env(archives, homes))
    assert quiet.code == 0, quiet.log()
    assert progress_lines(quiet, "orders-json"), quiet.stdout
    output = quiet.stdout + quiet.stderr
    assert not [noise for noise in NOISE + ("[cds]", "SharedArchive") if noise in output], output[-3000:]
    written = sorted(archives.iterdir())
    assert [p.suffix for p in written] == [".jsa"] and written[0].stat().st_size > 1_000_000, written
    built = sorted(homes.iterdir())
    assert [p.name[:11] for p in built] == ["spark-home-"], built
    assert (built[0] / "python" / "lib" / "pyspark.zip").stat().st_size > 5_000_000, "modules compiled beside"

    path, source, sink = tiny_pipeline(tmp_path, "loud")
    create_topics(bootstrap, {source: 1, sink: 1})
    produce_orders(bootstrap, source, 50)
    loud = kafka_eos(["run", str(path), "--once", "--verbose"], bootstrap, tmp_path, env=users_driver_env(archives, homes))
    assert loud.code == 0, loud.log()
    assert sorted(archives.iterdir()) == written, "the verbose run mapped the archive, wrote no other"
    assert sorted(homes.iterdir()) == built, "and found the compiled home built"
    assert "Using Spark's default log4j profile" in loud.stdout + loud.stderr, loud.log()
