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
    for name in STREAM_METADATA:
        try:
            jvm.java.lang.Class.forName(name)
        except Exception:  # noqa: BLE001 - py4j's error for a class this Spark does not have
            continue
        found = jvm
        for part in name.split("."):
            found = getattr(found, part)
        return found
    raise RuntimeError(f"this Spark ({VERSION}) has none of {', '.join(STREAM_METADATA)}")


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
