"""What happens to a record that fails to decode: ``fail``, ``skip`` (counted) or ``dlq``.

Invariants (pure logic over Arrow; no Kafka client here):
- ``fail`` raises ``RecordDecodeError`` naming topic, partition, offset and the error of the
  first failing row; the query fails and restarts from its checkpoint without committing.
- ``skip`` drops failing rows and reports how many.
- ``dlq`` keeps failing rows, marked by ``ERROR_COLUMN`` (the error text) and carrying the
  original bytes in ``RAW_VALUE_COLUMN`` (and ``RAW_KEY_COLUMN`` where the key was decoded too);
  ``dlq_batch`` turns them into sink rows for the DLQ
  topic: the original key, value and timestamp, and headers ``kafka-eos.error``,
  ``kafka-eos.source.topic``, ``kafka-eos.source.partition``, ``kafka-eos.source.offset``
  (values UTF-8). They go through the same sink, hence the same transaction, as the output.
"""
from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc

from kafka_eos import KafkaEosError
from kafka_eos.serde.formats import OnDecodeError

log = logging.getLogger(__name__)

ERROR_HEADER = "kafka-eos.error"
TOPIC_HEADER = "kafka-eos.source.topic"
PARTITION_HEADER = "kafka-eos.source.partition"
OFFSET_HEADER = "kafka-eos.source.offset"
ERROR_COLUMN = "_eos_error"
RAW_VALUE_COLUMN = "_eos_raw_value"
RAW_KEY_COLUMN = "_eos_raw_key"

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
TIME_TYPE = pa.timestamp("us", tz="UTC")  # the source's ``timestamp`` column
DLQ_SCHEMA = pa.schema([pa.field("key", pa.binary()), pa.field("value", pa.binary()),
                        pa.field("topic", pa.string()), pa.field("headers", HEADER_TYPE),
                        pa.field("timestamp", TIME_TYPE)])


class RecordDecodeError(KafkaEosError, ValueError):
    """A record failed to decode under ``on_decode_error: fail``."""


def where(batch: pa.RecordBatch, row: int) -> str:
    topic, partition, offset = (batch.column(c)[row].as_py() for c in ("topic", "partition", "offset"))
    return f"{topic}-{partition}@{offset}"


def apply_policy(batch: pa.RecordBatch, errors: list[str | None], raw_values: pa.Array,
                 policy: OnDecodeError, raw_keys: pa.Array | None = None) -> tuple[pa.RecordBatch, int]:
    """(the batch to pass on, rows skipped). ``batch`` already holds the decoded columns;
    ``errors[i]`` is the error of row i (None when it decoded), ``raw_values`` the original bytes
    (``raw_keys`` the original keys, where the key was decoded)."""
    failed = [i for i, e in enumerate(errors) if e is not None]
    if policy is OnDecodeError.FAIL and failed:
        first = failed[0]
        raise RecordDecodeError(
            f"record {where(batch, first)} failed to decode: {errors[first]} ({len(failed)} of {len(errors)} rows "
            "in this batch failed). Fix the producer, or set errors.on_decode_error to skip (keeps this "
            "checkpoint) or dlq (a DLQ pipeline needs a checkpoint of its own)")
    error_array = pa.array(errors, type=pa.string())
    if policy is OnDecodeError.SKIP:
        if failed:
            shown = ", ".join(f"{where(batch, i)} ({errors[i]})" for i in failed[:3])
            log.warning("skipped %d records that failed to decode (on_decode_error: skip): %s%s", len(failed), shown,
                        ", ..." if len(failed) > 3 else "")
        keep = pc.is_null(error_array)
        return batch.filter(keep), len(failed)
    def for_failed(raw: pa.Array) -> pa.Array:
        return pc.if_else(pc.is_valid(error_array), raw.cast(pa.binary()), pa.scalar(None, pa.binary()))
    marked = batch.append_column(ERROR_COLUMN, error_array).append_column(RAW_VALUE_COLUMN, for_failed(raw_values))
    if raw_keys is not None:
        marked = marked.append_column(RAW_KEY_COLUMN, for_failed(raw_keys))
    return marked, 0


def _headers(error: str, topic: str, partition: int, offset: int) -> list[dict]:
    pairs = ((ERROR_HEADER, error), (TOPIC_HEADER, topic), (PARTITION_HEADER, str(partition)),
             (OFFSET_HEADER, str(offset)))
    return [{"key": k, "value": v.encode()} for k, v in pairs]


def dlq_batch(marked: pa.RecordBatch, dlq_topic: str) -> pa.RecordBatch:
    """DLQ sink rows (``DLQ_SCHEMA``) for the failed rows of a batch ``apply_policy`` marked."""
    failed = marked.filter(pc.is_valid(marked.column(ERROR_COLUMN)))
    columns = {name: failed.column(name).to_pylist() for name in (ERROR_COLUMN, "topic", "partition", "offset")}
    headers = [_headers(e, t, p, o) for e, t, p, o in zip(*columns.values(), strict=True)]
    key = failed.column(RAW_KEY_COLUMN if RAW_KEY_COLUMN in failed.schema.names else "key")
    return pa.RecordBatch.from_arrays(
        [key.cast(pa.binary()), failed.column(RAW_VALUE_COLUMN),
         pa.array([dlq_topic] * failed.num_rows, pa.string()), pa.array(headers, HEADER_TYPE),
         failed.column("timestamp").cast(TIME_TYPE)], schema=DLQ_SCHEMA)
