"""Decode failures per on_decode_error: fail the query, skip and count, or route to the DLQ."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from kafka_eos.config.model import DataFormat, OnDecodeError
from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.spark_compat import arrow_schema
from kafka_eos.connectors.pipeline.row_schemas import decoded_spark_schema, dlq_spark_schema
from kafka_eos.serde.batch import decode_batch, decode_fn, decoded_schema, dlq_fn, encode_fn
from kafka_eos.serde.codecs import ValueSerde, decoder
from kafka_eos.serde.decode_errors import (DLQ_SCHEMA, ERROR_COLUMN, ERROR_HEADER, OFFSET_HEADER, PARTITION_HEADER,
                                            RAW_VALUE_COLUMN, TOPIC_HEADER, RecordDecodeError, dlq_batch)

SCHEMA = json.dumps({"type": "record", "name": "E", "fields": [{"name": "id", "type": "long"}]})
SERDE = ValueSerde(DataFormat.JSON, SCHEMA)


def source_batch(values: list) -> pa.RecordBatch:
    """A batch shaped like the kafka-eos source's output (topic 'in', partition 3, offsets 100..)."""
    schema = arrow_schema(source_schema())
    n = len(values)
    ts = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.RecordBatch.from_arrays([
        pa.array([f"k{i}".encode() for i in range(n)], pa.binary()), pa.array(values, pa.binary()),
        pa.array(["in"] * n), pa.array([3] * n, pa.int32()), pa.array(range(100, 100 + n), pa.int64()),
        pa.array([ts] * n, pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32())], schema=schema)


BATCH = source_batch([b'{"id": 1}', b"garbage", b'{"id": 3}', b'{"id": "x"}'])


def test_fail_names_the_record_and_the_fix():
    with pytest.raises(RecordDecodeError) as info:
        decode_batch(BATCH, decoder(SERDE), OnDecodeError.FAIL)
    message = str(info.value)
    assert "in-3@101" in message and "invalid JSON" in message and "2 of 4 rows" in message
    assert "on_decode_error" in message


def test_fail_passes_a_clean_batch():
    out, skipped = decode_batch(source_batch([b'{"id": 1}']), decoder(SERDE), OnDecodeError.FAIL)
    assert skipped == 0 and out.column("value").to_pylist() == [{"id": 1}]


def test_skip_drops_and_counts():
    out, skipped = decode_batch(BATCH, decoder(SERDE), OnDecodeError.SKIP)
    assert skipped == 2 and out.column("offset").to_pylist() == [100, 102]
    assert out.column("value").to_pylist() == [{"id": 1}, {"id": 3}]
    assert out.schema == decoded_schema(BATCH.schema, decoder(SERDE).arrow_type, OnDecodeError.SKIP)


def test_dlq_marks_failed_rows_and_keeps_their_bytes():
    out, skipped = decode_batch(BATCH, decoder(SERDE), OnDecodeError.DLQ)
    assert skipped == 0 and out.num_rows == 4
    assert out.schema == decoded_schema(BATCH.schema, decoder(SERDE).arrow_type, OnDecodeError.DLQ)
    errors = out.column(ERROR_COLUMN).to_pylist()
    assert errors[0] is None and errors[2] is None and "invalid JSON" in errors[1] and "not a whole number" in errors[3]
    assert out.column(RAW_VALUE_COLUMN).to_pylist() == [None, b"garbage", None, b'{"id": "x"}']


def test_dlq_records_carry_the_original_bytes_and_the_headers():
    marked, _ = decode_batch(BATCH, decoder(SERDE), OnDecodeError.DLQ)
    dlq = dlq_batch(marked, "in-dlq")
    assert dlq.schema == DLQ_SCHEMA and dlq.num_rows == 2
    assert dlq.column("key").to_pylist() == [b"k1", b"k3"]
    assert dlq.column("value").to_pylist() == [b"garbage", b'{"id": "x"}']
    assert dlq.column("topic").to_pylist() == ["in-dlq", "in-dlq"]
    headers = {h["key"]: h["value"] for h in dlq.column("headers").to_pylist()[0]}
    assert headers[TOPIC_HEADER] == b"in" and headers[PARTITION_HEADER] == b"3" and headers[OFFSET_HEADER] == b"101"
    assert headers[ERROR_HEADER].startswith(b"invalid JSON")
    assert [h["key"] for h in dlq.column("headers").to_pylist()[1]] == [
        "kafka-eos.error", "kafka-eos.source.topic", "kafka-eos.source.partition", "kafka-eos.source.offset"]


def test_map_in_arrow_functions_chain_over_batches():
    counted: list[int] = []
    decoded = list(decode_fn(SERDE, OnDecodeError.DLQ, counted.append)([BATCH, BATCH]))
    assert [b.num_rows for b in decoded] == [4, 4] and counted == []
    dlq = list(dlq_fn("in-dlq")(b.filter(pa.compute.is_valid(b.column(ERROR_COLUMN))) for b in decoded))
    assert sum(b.num_rows for b in dlq) == 4
    skipped = list(decode_fn(SERDE, OnDecodeError.SKIP, counted.append)([BATCH]))
    assert counted == [2] and skipped[0].num_rows == 2
    good = skipped[0].select(["key", "value"])
    encoded = next(encode_fn(SERDE)([good]))
    assert encoded.column("value").to_pylist() == [b'{"id":1}', b'{"id":3}']


def test_spark_schemas_match_the_arrow_output():
    spark = decoded_spark_schema(SERDE, OnDecodeError.DLQ)
    assert spark.fieldNames() == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                  ERROR_COLUMN, RAW_VALUE_COLUMN]
    assert spark["value"].dataType.simpleString() == "struct<id:bigint>"
    marked, _ = decode_batch(BATCH, decoder(SERDE), OnDecodeError.DLQ)
    assert arrow_schema(spark) == marked.schema
    assert arrow_schema(dlq_spark_schema()) == DLQ_SCHEMA
