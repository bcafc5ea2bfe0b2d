"""README's list of the executors' third-party packages (what `--py-files kafka_eos.zip` does not ship)
is what the executor-side modules import: the sources' readers, the sink's writer, the Arrow steps."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what runs in a Spark task: unpickled readers and writers, the functions of mapInArrow steps, the
# registry client serde.registry imports when a task first decodes registry Avro
EXECUTOR_MODULES = ["kafka_eos.connectors.datasource", "kafka_eos.connectors.source.stream_reader",
                    "kafka_eos.connectors.sink.stream_writer", "kafka_eos.serde.batch", "kafka_eos.serde.codecs",
                    "kafka_eos.connectors.pipeline.late_records", "confluent_kafka.schema_registry"]
SPARK = {"pyspark", "py4j", "kafka-eos"}    # Spark's own Python, and the zip itself
OPTIONAL = {"numpy", "zstandard"}           # imported when present (pyarrow, kafka-python), needed by neither
PROBE = """
import importlib, importlib.metadata as md, json, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    importlib.import_module(name)
owners = md.packages_distributions()
top = {m.split(".")[0] for m in set(sys.modules) - before}
print(json.dumps(sorted({d for t in top for d in owners.get(t, [])})))
"""


def listed() -> set[str]:
    block = re.search(r"<!-- executor-deps -->(.*?)<!-- /executor-deps -->", (ROOT / "README.md").read_text(), re.DOTALL)
    assert block, "README.md lost its <!-- executor-deps --> list"
    return {re.sub(r"\[.*\]", "", name) for name in re.findall(r"`([\w\-\[\]]+)`", block.group(1))}


def requirements(dist: str, extras: tuple[str, ...] = ()) -> set[str]:
    """The distributions ``dist`` requires here (this Python, with ``extras``), and theirs."""
    from importlib import metadata

    from packaging.requirements import Requirement
    found: set[str] = set()
    for line in metadata.requires(dist) or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in (*extras, "")):
            found.add(req.name.lower())
    return found | {d for r in found for d in requirements(r)}


def test_readme_lists_what_executors_import():
    out = subprocess.run([sys.executable, "-c", PROBE, *EXECUTOR_MODULES], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    imported = {d.lower() for d in json.loads(out)} - SPARK - OPTIONAL
    named = listed()
    brought = {d for n in named for d in requirements(n, ("schemaregistry",))}
    assert imported - named - brought == set(), "executors import packages README does not list"
    assert named - imported == set(), "README lists packages no executor-side module imports"
