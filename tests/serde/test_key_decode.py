"""Keys with a schema: decoded beside the values, a key that does not decode is the record's error
(named "key"), the DLQ gets the original key bytes; keys encoded beside the values."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from kafka_eos.config.model import DataFormat, OnDecodeError
from kafka_eos.connectors.pipeline.row_schemas import decoded_spark_schema
from kafka_eos.connectors.schema import source_schema
from kafka_eos.connectors.spark_compat import arrow_schema
from kafka_eos.serde.avro_serde import AvroEncoder
from kafka_eos.serde.batch import decode_batch, decoded_schema, encode_fn
from kafka_eos.serde.codecs import ValueSerde, decoder
from kafka_eos.serde.decode_errors import ERROR_COLUMN, RAW_KEY_COLUMN, RecordDecodeError, dlq_batch

KEY = json.dumps({"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}]})
VALUE = json.dumps({"type": "record", "name": "V", "fields": [{"name": "amount", "type": "double"}]})
KEYS, VALUES = ValueSerde(DataFormat.AVRO, KEY), ValueSerde(DataFormat.JSON, VALUE)


def key(n: int) -> bytes:
    return AvroEncoder(KEY).encode_one({"id": n})


def source_batch(keys: list, values: list) -> pa.RecordBatch:
    """Rows shaped like the kafka-eos source's (topic 'in', partition 0, offsets 10..)."""
    n, ts = len(keys), dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.RecordBatch.from_arrays([
        pa.array(keys, pa.binary()), pa.array(values, pa.binary()), pa.array(["in"] * n),
        pa.array([0] * n, pa.int32()), pa.array(range(10, 10 + n), pa.int64()),
        pa.array([ts] * n, pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32())],
        schema=arrow_schema(source_schema()))


BAD_KEY = b"\xff"  # a zig-zag varint cut short: not an Avro long
BATCH = source_batch([key(1), BAD_KEY, None, key(4)],
                     [b'{"amount": 1.5}', b'{"amount": 2.5}', b'{"amount": 3.5}', b"not json"])


def test_keys_and_values_decode_and_each_failure_names_what_failed():
    out, skipped = decode_batch(BATCH, decoder(VALUES), OnDecodeError.DLQ, decoder(KEYS))
    assert skipped == 0
    assert out.column("key").to_pylist() == [{"id": 1}, None, None, {"id": 4}]
    errors = out.column(ERROR_COLUMN).to_pylist()
    assert errors[0] is None and errors[2] is None            # a null key is no error: it stays null
    assert errors[1].startswith("key: ") and "value" not in errors[1]
    assert errors[3] is not None and not errors[3].startswith("key")
    assert out.column(RAW_KEY_COLUMN).to_pylist() == [None, BAD_KEY, None, key(4)]  # every failed row's


def test_the_dlq_gets_the_original_key_bytes():
    marked, _ = decode_batch(BATCH, decoder(VALUES), OnDecodeError.DLQ, decoder(KEYS))
    rows = dlq_batch(marked, "in-dlq")
    assert rows.column("key").to_pylist() == [BAD_KEY, key(4)]
    assert rows.column("value").to_pylist() == [b'{"amount": 2.5}', b"not json"]


def test_fail_names_the_record_whose_key_failed():
    with pytest.raises(RecordDecodeError, match=r"record in-0@11 failed to decode: key: "):
        decode_batch(BATCH, decoder(VALUES), OnDecodeError.FAIL, decoder(KEYS))


def test_skip_drops_the_rows_whose_key_or_value_failed():
    out, skipped = decode_batch(BATCH, decoder(VALUES), OnDecodeError.SKIP, decoder(KEYS))
    assert skipped == 2 and out.column("offset").to_pylist() == [10, 12]


def test_the_spark_schema_types_the_key_as_its_schema_and_carries_the_raw_key_under_dlq():
    spark_schema = decoded_spark_schema(VALUES, OnDecodeError.DLQ, key_serde=KEYS)
    assert spark_schema["key"].dataType.simpleString() == "struct<id:bigint>"
    assert RAW_KEY_COLUMN in spark_schema.names
    plain = decoded_schema(arrow_schema(source_schema()), pa.string(), OnDecodeError.DLQ)
    assert plain.field("key").type == pa.binary() and RAW_KEY_COLUMN not in plain.names


def test_keys_are_encoded_beside_the_values():
    rows = pa.RecordBatch.from_pydict({"key": [{"id": 7}, None], "value": [{"amount": 1.0}, {"amount": 2.0}]})
    out = next(encode_fn(ValueSerde(DataFormat.JSON), key_serde=KEYS)(iter([rows])))
    assert out.column("key").to_pylist() == [key(7), None]
    assert [json.loads(v) for v in out.column("value").to_pylist()] == [{"amount": 1.0}, {"amount": 2.0}]


def test_a_dlq_record_keeps_its_source_records_timestamp():
    marked, _ = decode_batch(BATCH, decoder(VALUES), OnDecodeError.DLQ, decoder(KEYS))
    rows = dlq_batch(marked, "in-dlq")
    assert rows.column("timestamp").to_pylist() == [BATCH.column("timestamp")[1].as_py()] * 2
