"""What this pyspark offers, asked in one place: everything else imports these names and flags
instead of checking versions.

kafka-eos runs on pyspark 4.0.x-4.3.x. What differs, found by what pyspark has (not by its
version number):
- ``ADMISSION_CONTROL`` (4.2+, SPARK-55304): Python streaming sources get ``latestOffset(start,
  limit)``, ``getDefaultReadLimit`` and ``SupportsTriggerAvailableNow``. Without it (4.0, 4.1) Spark
  calls ``latestOffset()`` with neither start nor limit, once per batch, on a reader that lives for
  the query in the driver's Python worker; the source then keeps its own start
  (``connectors.source.legacy_reader``), and ``Trigger.AvailableNow`` is Spark's wrapper, which asks
  the source once and so reads one batch: kafka-eos runs ``run --once`` as a drain instead
  (``available_now_drains``).
- ``ARROW_STREAM_WRITER`` (4.1+): ``DataSourceStreamArrowWriter``, Arrow batches into the sink's
  tasks. Without it (4.0) the sink is a row writer and its tasks turn rows into Arrow batches.

- ``arrow_schema``: pyspark's ``to_arrow_schema`` changed its timestamp argument in 4.2.
- ``stream_metadata``: Spark's ``StreamMetadata`` (a checkpoint's query id) moved to
  ``...streaming.runtime`` in 4.1.

``ReadLimit``, ``ReadAllAvailable``, ``ReadMaxRows`` and ``SupportsTriggerAvailableNow`` are
pyspark's where it has them, else small stand-ins with the same names and fields (Spark never
sees them: only kafka-eos's own planning passes them around).

"""
from __future__ import annotations

import inspect
from typing import Any

import pyspark
from pyspark.sql import datasource as _datasource

VERSION: str = pyspark.__version__
SUPPORTED = "4.0.x-4.3.x"

try:
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                                  SupportsTriggerAvailableNow)
    ADMISSION_CONTROL = True
except ImportError:  # pyspark 4.0, 4.1
    ADMISSION_CONTROL = False

    class ReadLimit:  # type: ignore[no-redef]
        """Stand-in of pyspark 4.2's ReadLimit (kafka-eos's planning only)."""

    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        def __repr__(self) -> str:
            return "ReadAllAvailable()"

    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        def __init__(self, max_rows: int) -> None:
            self.max_rows = max_rows

        def __repr__(self) -> str:
            return f"ReadMaxRows({self.max_rows})"

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in mixin: on this pyspark Spark never asks a Python source to prepare for it."""

ARROW_STREAM_WRITER: bool = hasattr(_datasource, "DataSourceStreamArrowWriter")
StreamWriterBase: type = getattr(_datasource, "DataSourceStreamArrowWriter", _datasource.DataSourceStreamWriter)


def available_now_drains() -> bool:
    """True where ``run --once`` (and ``trigger: available_now``) runs as a drain: the source stops at
    the end offsets taken when the run starts, the query runs back-to-back batches and the runner
    stops it after the first trigger that plans none (Spark's availableNow ends the same way)."""
    return not ADMISSION_CONTROL


STREAM_METADATA = ("org.apache.spark.sql.execution.streaming.runtime.StreamMetadata",  # 4.1+
                   "org.apache.spark.sql.execution.streaming.StreamMetadata")          # 4.0


def stream_metadata(jvm: Any) -> Any:
    """Spark's ``StreamMetadata`` class in ``jvm`` (its companion's ``read``/``write``)."""
    return _jvm_class(jvm, STREAM_METADATA)


def arrow_schema(schema) -> Any:
    """The Arrow form of a Spark schema, timestamps in UTC (pyspark's ``to_arrow_schema`` takes
    ``timezone=`` from 4.2, ``timestamp_utc=`` before)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema, timestamp_utc=True)  # type: ignore[call-arg]  # pyspark 4.0/4.1


def describe() -> str:
    """One line for logs and ``validate``: the version and what it runs with."""
    source = "admission control" if ADMISSION_CONTROL else "source keeps its own start (no admission control API)"
    sink = "Arrow stream writer" if ARROW_STREAM_WRITER else "row stream writer (rows turned into Arrow in the task)"
    return f"pyspark {VERSION}: {source}; {sink}"


OFFSET_LOG_PACKAGES = ("org.apache.spark.sql.execution.streaming.checkpointing",  # 4.1+
                       "org.apache.spark.sql.execution.streaming")                 # 4.0
SERIALIZED_OFFSET = ("org.apache.spark.sql.execution.streaming.runtime.SerializedOffset",  # 4.1+
                     "org.apache.spark.sql.execution.streaming.SerializedOffset")          # 4.0
OFFSET_LOG_FORMAT_CONF = "spark.sql.streaming.offsetLog.formatVersion"  # 4.3: a v2 log names its sources


def _jvm_class(jvm: Any, names: tuple[str, ...]) -> Any:
    """The first of ``names`` this JVM has (its class object, companion methods through it)."""
    for name in names:
        try:
            jvm.java.lang.Class.forName(name)
        except Exception:  # noqa: BLE001 - py4j's error for a class this Spark does not have
            continue
        found = jvm
        for part in name.split("."):
            found = getattr(found, part)
        return found
    raise RuntimeError(f"this Spark ({VERSION}) has none of {', '.join(names)}")


def offset_seq_metadata_json(spark: Any, watermark_ms: int, timestamp_ms: int) -> dict[str, Any]:
    """Spark's own ``OffsetSeqMetadata(watermark, timestamp, session conf)`` as the dict of its JSON
    (the SQL settings a new query's offset log records; the package moved in 4.1)."""
    import json
    jvm = spark._sc._jvm
    metadata = _jvm_class(jvm, tuple(f"{p}.OffsetSeqMetadata" for p in OFFSET_LOG_PACKAGES))
    return json.loads(metadata.apply(int(watermark_ms), int(timestamp_ms), spark._jsparkSession.conf()).json())


def offset_log_format(spark: Any) -> str:
    """The offset-log format a new query of this session writes: '1' (every version's default);
    4.3's ``offsetLog.formatVersion`` 2 writes the sources as a named map."""
    return str(spark.conf.get(OFFSET_LOG_FORMAT_CONF, "1") or "1")


def add_offset_seq(spark: Any, offsets_dir: str, batch_id: int, metadata_json: str, lines: list[str]) -> bool:
    """Add ``batch_id`` to the offset log at ``offsets_dir`` through Spark's own ``OffsetSeqLog``
    (v1: the metadata line, one line per source); False when that batch exists (create-only).
    The log takes ``readOnly`` from 4.2."""
    jvm = spark._sc._jvm
    package = next(p for p in OFFSET_LOG_PACKAGES
                   if _has_class(jvm, f"{p}.OffsetSeqLog"))
    offset = _jvm_class(jvm, SERIALIZED_OFFSET)
    offsets = jvm.java.util.ArrayList()
    for line in lines:
        offsets.add(offset(line))
    seq = jvm.scala.jdk.javaapi.CollectionConverters.asScala(offsets).toSeq()
    entry = _jvm_class(jvm, (f"{package}.OffsetSeq",)).fill(jvm.scala.Option.apply(metadata_json), seq)
    log_class = _jvm_class(jvm, (f"{package}.OffsetSeqLog",))
    try:
        log = log_class(spark._jsparkSession, offsets_dir, False)   # 4.2+
    except Exception:  # noqa: BLE001 - py4j: no such constructor (4.0, 4.1)
        log = log_class(spark._jsparkSession, offsets_dir)
    return bool(log.add(int(batch_id), entry))


def _has_class(jvm: Any, name: str) -> bool:
    try:
        jvm.java.lang.Class.forName(name)
        return True
    except Exception:  # noqa: BLE001 - py4j's error for a class this Spark does not have
        return False


def watermark_seed_refusal() -> str | None:
    """Why this pyspark cannot take a restore's first watermark (an empty batch 0 under the
    savepoint's watermark, ``pipeline.watermark_seed``), or None where it can (measured on 4.0.5,
    4.1.4, 4.2.1 and 4.3.0: docs/savepoints.md, 'The first watermark')."""
    return None
