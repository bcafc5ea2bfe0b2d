"""What each value format costs a Python worker: decode then encode the same records (issue 66).

The same 10,000 order records (id, amount, status, two lines, a tag map, a timestamp) as Arrow
batches, in each format's wire bytes: Avro (Confluent wire format, fastavro), Protobuf
(Confluent wire format with message indexes, one Python message object per record), JSON
Schema (Confluent wire format, each value validated by jsonschema) and plain JSON (typed by an
Avro-style schema). Per run: ``decoder(serde).decode`` of the bytes, then
``encoder(serde).encode`` of the decoded column, in one process, writer schemas from an
in-process lookup (a registry's lookups are cached per id, so they cost nothing per record).
Interleaved rounds, the format order rotating each round; per format the median and spread of
the records per second. No Spark and no broker: the serde's own cost, the floor under a
pipeline's Python stage.

    python -m bench.serde_formats [--rounds 5] [--records 10000]

Writes ``bench/results/<date>-serde-formats.json``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from typing import Any, Callable

import pyarrow as pa

from bench.common import load_avg, write_result
from bench.method import summary
from kafka_eos.serde.avro_serde import AvroDecoder, AvroEncoder
from kafka_eos.serde.json_schema_registry import validator
from kafka_eos.serde.json_schema_serde import JsonSchemaDecoder, JsonSchemaEncoder
from kafka_eos.serde.json_serde import JsonDecoder, JsonEncoder
from kafka_eos.serde.protobuf_schemas import ProtoSchema, compile_schema
from kafka_eos.serde.protobuf_serde import ProtobufDecoder, ProtobufEncoder

SCHEMA_ID = 7
PROTO = """syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Order {
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1; int64 amount = 2; string status = 3; repeated Line lines = 4; map<string, int64> tags = 5;
  google.protobuf.Timestamp at = 6;
}
"""
LINE = {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}
AVRO = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "string"}, {"name": "amount", "type": "long"}, {"name": "status", "type": "string"},
    {"name": "lines", "type": {"type": "array", "items": LINE}}, {"name": "tags", "type": {"type": "map", "values": "long"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}]})
JSON_SCHEMA = json.dumps({"type": "object", "properties": {
    "id": {"type": "string"}, "amount": {"type": "integer"}, "status": {"type": "string"},
    "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"},
                                                                           "qty": {"type": "integer"}}}},
    "tags": {"type": "object", "additionalProperties": {"type": "integer"}},
    "at": {"type": "string", "format": "date-time"}}, "required": ["id", "amount"]})
AT = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


def rows(n: int) -> list[dict]:
    return [{"id": f"order-{i}", "amount": i * 7, "status": "PAID", "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}],
             "tags": {"shop": i % 5}, "at": AT + dt.timedelta(seconds=i)} for i in range(n)]


def codecs() -> dict[str, tuple[Any, Any]]:
    """format -> (decoder, encoder) over the same records."""
    file_set = compile_schema(PROTO, "order.proto")
    proto, check, avro = ProtoSchema(file_set), validator(json.loads(JSON_SCHEMA)), AvroDecoder(AVRO).reader
    lookup: Callable[[int], Any] = lambda schema_id: {SCHEMA_ID: proto}[schema_id]  # noqa: E731
    return {
        "avro": (AvroDecoder(AVRO, lambda schema_id: avro), AvroEncoder(AVRO, SCHEMA_ID)),
        "protobuf": (ProtobufDecoder(file_set, "Order", lookup), ProtobufEncoder(file_set, "Order", SCHEMA_ID)),
        "json_schema": (JsonSchemaDecoder(JSON_SCHEMA, lambda schema_id: check), JsonSchemaEncoder(JSON_SCHEMA, SCHEMA_ID)),
        "json": (JsonDecoder(AVRO), JsonEncoder()),
    }


def one_run(decoder: Any, encoder: Any, values: pa.Array) -> float:
    """Records per second of decode + encode."""
    started = time.perf_counter()
    decoded, errors = decoder.decode(values)
    encoder.encode(decoded)
    elapsed = time.perf_counter() - started
    assert not any(errors), next(e for e in errors if e)
    return len(values) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    formats = codecs()
    records = rows(args.records)
    inputs = {name: enc.encode(pa.array(records, dec.arrow_type)) for name, (dec, enc) in formats.items()}
    samples: dict[str, list[float]] = {name: [] for name in formats}
    loads = [load_avg()]
    names = list(formats)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            samples[name].append(one_run(*formats[name], inputs[name]))
        loads.append(load_avg())
    result = {"records": args.records, "rounds": args.rounds, "load_avg_1m": {"min": min(loads), "max": max(loads)},
              "value_bytes_median": {n: sorted(len(v) for v in inputs[n].to_pylist())[args.records // 2] for n in names},
              "records_per_s": {name: summary(values) for name, values in samples.items()}}
    print(json.dumps(result, indent=1))
    print(write_result("serde-formats", result))


if __name__ == "__main__":
    main()
