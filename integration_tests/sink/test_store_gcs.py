"""Issue 63: a pipeline whose Spark checkpoint is on ``gs://`` (fake-gcs-server on loopback,
``gcs_emulator``) through Google's Hadoop connector from Maven (gcs-connector 4.0.4's shaded jar, the
Hadoop 3 line, on pyspark's Hadoop 3.5.0) and whose own records are kept in Kafka
(``checkpoint.records: kafka``), as on Dataproc. Nothing reaches Google: the connector is
unauthenticated (``fs.gs.auth.type``) and sends every call to the emulator (``fs.gs.storage.root.url``);
the metadata server's address is a closed loopback port in case anything asks it (pyarrow's GCS
client does, for its default credentials, wherever kafka-eos's Python opens gs:// itself).

Two settings the emulator and pyspark's Hadoop need (``gcs_conf``): Hadoop 3.5's core-default.xml
carries its own gs:// connector's defaults with unit suffixes ("64m"), which Google's connector reads
as plain numbers (NumberFormatException before the first call), so the sizes are given in bytes; and
the emulator lacks objects.move, which the connector uses for a rename (Spark renames every
checkpoint file into place), so ``fs.gs.operation.move.enable`` is false: rewrite, then delete,
each with a generation precondition. First a plain streaming query's checkpoint there (Spark alone),
then ``store_cells``'s cell. make chaos."""
from __future__ import annotations

import re
import time

import pytest

from integration_tests.gcs_emulator import create_bucket, gcs_server, object_names
from integration_tests.hadoop_connectors import connector_jars
from integration_tests.checkpoint_smoke import SCRIPT, check
from integration_tests.kafka_tools import unique
from integration_tests.store_cells import Store, run_cell
from kafka_eos.connectors.spark_harness import spark_submit

pytestmark = pytest.mark.chaos

BUCKET = "checkpoints"
# Where Google's clients find the metadata server: a closed loopback port (the JVM's google-auth reads
# GCE_METADATA_HOST; pyarrow's google-cloud-cpp, whose default credentials otherwise resolve
# metadata.google.internal, reads GCE_METADATA_ROOT)
NO_METADATA_SERVER = {"GCE_METADATA_HOST": "127.0.0.1:9", "GCE_METADATA_IP": "127.0.0.1:9", "GCE_METADATA_ROOT": "127.0.0.1:9",
                      "NO_GCE_CHECK": "true"}

SMOKE = SCRIPT + '''
# The connector's default rename (objects.move), on a file system of its own
moving = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
moving.set("fs.gs.operation.move.enable", "true")
moving.setBoolean("fs.gs.impl.disable.cache", True)
mover = path.getFileSystem(moving)
source = jvm.org.apache.hadoop.fs.Path(path, "move-probe.tmp")
out = mover.create(source, False)
out.write(bytearray(b"probe"))
out.close()
try:
    print(f"move: renamed {mover.rename(source, jvm.org.apache.hadoop.fs.Path(path, 'move-probe'))}")
except Exception as exc:
    print(f"move: failed {str(getattr(exc, 'java_exception', exc)).splitlines()[0]}")
'''


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """(host:port, its request log) of the module's fake-gcs-server, bucket ``BUCKET`` made."""
    log = tmp_path_factory.mktemp("gcs") / "requests.log"
    with gcs_server(log) as endpoint:
        create_bucket(endpoint, BUCKET)
        yield endpoint, log


def gcs_conf(endpoint: str) -> dict[str, str]:
    settings = {"fs.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
                "fs.AbstractFileSystem.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS",
                "fs.gs.storage.root.url": f"http://{endpoint}", "fs.gs.auth.type": "UNAUTHENTICATED",
                "fs.gs.project.id": "test", "fs.gs.operation.move.enable": "false",
                # Hadoop 3.5's core-default.xml says these with unit suffixes; Google's connector reads numbers
                "fs.gs.block.size": str(64 << 20), "fs.gs.rewrite.max.chunk.size": str(512 << 20),
                "fs.gs.outputstream.buffer.size": str(8 << 20), "fs.gs.inputstream.inplace.seek.limit": str(8 << 20),
                "fs.gs.inputstream.min.range.request.size": str(2 << 20)}
    return {"spark.jars": ",".join(connector_jars("gcs")), **{f"spark.hadoop.{k}": v for k, v in settings.items()}}


def calls(log) -> list[tuple[str, str, int]]:
    """(method, path with object names as X, status) of each call in the emulator's request log."""
    found = re.findall(r'\\"([A-Z]+) (/[^ ?]*)[^"]*HTTP/1\.1\\" (\d+)', log.read_text())
    return [(method, re.sub(r"/o/[^/]+", "/o/X", path), int(status)) for method, path, status in found]


def test_a_spark_checkpoint_on_gcs_keeps_a_streaming_query_going(emulator, tmp_path, monkeypatch):
    endpoint, log = emulator
    for key, value in NO_METADATA_SERVER.items():
        monkeypatch.setenv(key, value)
    script = tmp_path / "smoke.py"
    script.write_text(SMOKE)
    name = unique("smoke")
    began = time.monotonic()
    done = spark_submit(script, [f"gs://{BUCKET}/{name}"], master="local[1]", conf=gcs_conf(endpoint), timeout=400,
                        extra=["--driver-memory", "512m"])
    print(f"smoke: {time.monotonic() - began:.1f} s\n{done.stdout}")
    assert done.returncode == 0, done.stderr[-5000:]
    lines = check(done.stdout, f"com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem gs://{BUCKET}/")
    stored = object_names(endpoint, BUCKET, f"{name}/")
    assert f"{name}/metadata" in stored and f"{name}/offsets/0" in stored and f"{name}/commits/2" in stored, stored
    assert not any(".tmp" in n for n in stored if "move-probe" not in n), stored  # every temp file renamed away
    made = calls(log)
    kinds = sorted({(m, p) for m, p, _ in made})
    print(f"emulator calls ({len(made)}): {kinds}")
    assert ("POST", "/upload/storage/v1/b/checkpoints/o") in kinds, kinds  # resumable and multipart uploads
    assert ("POST", "/storage/v1/b/checkpoints/o/X/rewriteTo/b/checkpoints/o/X") in kinds, kinds  # the rename
    # The connector's default rename is objects.move, which the emulator refuses (what the setting avoids)
    assert lines["move"].startswith("failed ") and "Error moving" in lines["move"], lines["move"]
    assert ("POST", "/storage/v1/b/checkpoints/o/X/moveTo/o/X", 400) in made, kinds


def test_a_checkpoint_on_gcs_with_records_in_kafka_is_exactly_once_through_driver_kills(bootstrap, emulator, tmp_path,
                                                                                       record_property):
    endpoint, _ = emulator
    conf = [arg for key, value in gcs_conf(endpoint).items() for arg in ("--conf", f"{key}={value}")]
    store = Store(f"gs://{BUCKET}/{unique('ck')}", dict(NO_METADATA_SERVER), conf, records="kafka",
                  says="orders-store.yaml: OK")
    began = time.monotonic()
    figures = run_cell(bootstrap, tmp_path, store)
    figures["cell_s"] = round(time.monotonic() - began)
    for name, value in figures.items():
        record_property(name, value)
    print(f"GCS store, records in Kafka: {figures}")
