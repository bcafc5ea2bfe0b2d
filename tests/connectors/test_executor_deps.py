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
                    "kafka_eos.connectors.pipeline.late_records", "confluent_kafka.schema_registry",
                    # what a sink task's writer imports when it writes (the write evidence, the partitioner)
                    "kafka_eos.txn.writer.write_evidence", "kafka_eos.txn.writer.record_digest",
                    "kafka_eos.txn.writer.record_partitioner",
                    # what a task imports when it first decodes or encodes Protobuf (protoc included) or JSON Schema
                    "kafka_eos.serde.protobuf_serde", "kafka_eos.serde.protobuf_schemas", "kafka_eos.serde.json_schema_serde",
                    # imported inside functions there: JSON Schema's validator, protoc (a registry schema per worker)
                    "jsonschema", "grpc_tools.protoc"]
SPARK = {"pyspark", "py4j", "kafka-eos"}    # Spark's own Python, and the zip itself
OPTIONAL = {"zstandard",                   # imported when present (kafka-python), needed by none
            "googleapis-common-protos",     # shares the `google` namespace with protobuf; nothing imports it
            "jsonpointer", "rfc3339-validator", "six"}  # jsonschema's format checkers, loaded when present
PROBE = """
import importlib, importlib.metadata as md, json, sys
import pyspark.sql.datasource, pyspark.sql.types  # what pyspark loads itself (4.0 loads psutil if present)
before = set(sys.modules)
for name in sys.argv[1:]:
    importlib.import_module(name)
owners = md.packages_distributions()
def dists(modules):
    return sorted({d for t in {m.split(".")[0] for m in modules} for d in owners.get(t, [])})
print(json.dumps({"imported": dists(set(sys.modules) - before), "preloaded": dists(before)}))
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
    found = json.loads(out)
    imported = {d.lower() for d in found["imported"]} - SPARK - OPTIONAL
    preloaded = {d.lower() for d in found["preloaded"]}  # pyspark's own imports (4.0: numpy, psutil)
    named = listed()
    brought = {d for n in named for d in requirements(n, ("schemaregistry",))}
    assert imported - named - brought == set(), "executors import packages README does not list"
    assert named - imported - preloaded == set(), "README lists packages no executor-side module imports"
