"""A Protobuf value through the pipeline's per-batch functions (what ``mapInArrow`` runs) and the
Spark schemas the pipeline declares for them: decode with a DLQ, the DLQ rows, encode."""
from __future__ import annotations

import pyarrow as pa

from kafka_eos.connectors.pipeline.row_schemas import decoded_spark_schema
from kafka_eos.serde.batch import decode_fn, dlq_fn, encode_fn
from kafka_eos.serde.codecs import ValueSerde, decoder
from kafka_eos.serde.decode_errors import ERROR_COLUMN
from kafka_eos.serde.formats import DataFormat, OnDecodeError
from tests.serde.test_protobuf_serde import ORDER, full_row
from kafka_eos.serde.protobuf_schemas import compile_schema

SOURCE = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
                    ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())])


def test_decode_route_and_encode_a_batch_of_protobuf_values():
    serde = ValueSerde(DataFormat.PROTOBUF, descriptors=compile_schema(ORDER, "order.proto"), message="Order")
    t = decoder(serde).arrow_type
    good = [v.as_py() for v in serde_encode(serde, [full_row(i) for i in range(3)], t)]
    values = [good[0], b"\xff\xff", good[1], None, good[2]]
    batch = pa.RecordBatch.from_arrays(
        [pa.array([b"k"] * 5), pa.array(values, pa.binary()), pa.array(["in"] * 5), pa.array([0] * 5, pa.int32()),
         pa.array(range(10, 15), pa.int64()), pa.array([0] * 5, pa.timestamp("us", tz="UTC")), pa.array([0] * 5, pa.int32())],
        schema=SOURCE)
    decoded = next(decode_fn(serde, OnDecodeError.DLQ)(iter([batch])))
    assert decoded.column(ERROR_COLUMN).to_pylist()[1].startswith("invalid Protobuf")
    assert [v and v["id"] for v in decoded.column("value").to_pylist()] == ["o-0", None, "o-1", None, "o-2"]
    dlq = next(dlq_fn("in-dlq")(iter([decoded])))
    headers = {h["key"]: h["value"] for h in dlq.column("headers").to_pylist()[0]}
    assert dlq.num_rows == 1 and dlq.column("value").to_pylist() == [b"\xff\xff"]
    assert headers["kafka-eos.source.offset"] == b"11" and headers["kafka-eos.source.topic"] == b"in"

    kept = decoded.filter(pa.compute.is_null(decoded.column(ERROR_COLUMN))).select(["key", "value"])
    encoded = next(encode_fn(serde)(iter([kept])))
    assert encoded.column("value").to_pylist() == good[:2] + [None] + good[2:]


def serde_encode(serde, rows, t):
    from kafka_eos.serde.codecs import encoder
    return encoder(serde).encode(pa.array(rows, t))


def test_spark_takes_the_decoded_schema_of_every_protobuf_field_type():
    serde = ValueSerde(DataFormat.PROTOBUF, descriptors=compile_schema(ORDER, "order.proto"), message="Order")
    value = decoded_spark_schema(serde, OnDecodeError.DLQ)["value"].dataType
    assert value.simpleString() == (
        "struct<id:string,amount:bigint,big:decimal(20,0),rate:double,status:string,lines:array<struct<sku:string,"
        "qty:int>>,tags:map<string,bigint>,card:string,iban:string,at:timestamp,took:interval day to second,"
        "maybe:int,notes:array<string>,by_sku:map<string,struct<sku:string,qty:int>>,raw:binary,small:bigint>")
