"""Protobuf values <-> Arrow: the schema compiled by protoc, every kind of field, plain bytes and
the Confluent wire format (writer schemas given as a dict: the registry's lookups are
tested in test_protobuf_registry)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from kafka_eos.serde.avro_serde import UnknownSchemaId
from kafka_eos.serde.codecs import ValueSerde, decoder, encoder
from kafka_eos.serde.formats import DataFormat, Registry
from kafka_eos.serde.protobuf_schemas import ProtoSchema, ProtoSchemaError, compile_schema, message_class
from kafka_eos.serde.protobuf_serde import ProtobufDecoder, ProtobufEncoder
from kafka_eos.serde.protobuf_types import ProtoTypeError, message_type
from kafka_eos.serde.protobuf_wire import frame, unframe

ORDER = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";

message Ping { string id = 1; }
message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  int64 amount = 2;
  uint64 big = 3;
  optional double rate = 4;
  Status status = 5;
  repeated Line lines = 6;
  map<string, int64> tags = 7;
  oneof pay { string card = 8; string iban = 9; }
  google.protobuf.Timestamp at = 10;
  google.protobuf.Duration took = 11;
  google.protobuf.Int32Value maybe = 12;
  repeated string notes = 13;
  map<string, Line> by_sku = 14;
  bytes raw = 15;
  uint32 small = 16;
}
"""
AT = dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def file_set() -> bytes:
    return compile_schema(ORDER, "order.proto")


def full_row(i: int) -> dict:
    return {"id": f"o-{i}", "amount": -i, "big": Decimal(2**64 - 1), "rate": 0.5, "status": "PAID",
            "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 0}], "tags": {"x": 1},
            "card": None, "iban": "DE00", "at": AT, "took": dt.timedelta(seconds=90, microseconds=5),
            "maybe": 0, "notes": ["n1"], "by_sku": {"a": {"sku": "a", "qty": 2}}, "raw": b"\x00\x01", "small": 2**32 - 1}


def test_every_kind_of_field_has_its_spark_type(file_set):
    t = message_type(ProtoSchema(file_set).message("Order"))
    line = pa.struct([pa.field("sku", pa.string()), pa.field("qty", pa.int32())])
    assert t == pa.struct([
        ("id", pa.string()), ("amount", pa.int64()), ("big", pa.decimal128(20, 0)), ("rate", pa.float64()),
        ("status", pa.string()), ("lines", pa.list_(line)), ("tags", pa.map_(pa.string(), pa.int64())),
        ("card", pa.string()), ("iban", pa.string()), ("at", pa.timestamp("us", tz="UTC")),
        ("took", pa.duration("us")), ("maybe", pa.int32()), ("notes", pa.list_(pa.string())),
        ("by_sku", pa.map_(pa.string(), line)), ("raw", pa.binary()), ("small", pa.int64())])


def test_bytes_written_by_protobuf_itself_decode_with_presence_rules(file_set):
    schema = ProtoSchema(file_set)
    order = message_class(schema, "shop.Order")(id="o-1", amount=5, status=1, card="4111")
    order.lines.add(sku="a", qty=3)
    order.tags["k"] = 7
    order.at.FromDatetime(AT)
    order.maybe.value = 0   # a wrapper that is set holds its value, even the default
    decoded, errors = ProtobufDecoder(file_set, "Order").decode(pa.array([order.SerializeToString(), None]))
    row = decoded.to_pylist()[0]
    assert errors == [None, None] and decoded.to_pylist()[1] is None
    assert row["id"] == "o-1" and row["amount"] == 5 and row["status"] == "PAID" and row["card"] == "4111"
    assert row["iban"] is None and row["rate"] is None and row["took"] is None   # presence: unset -> null
    assert row["big"] == 0 and row["raw"] == b""                                 # proto3 scalars: default
    assert row["lines"] == [{"sku": "a", "qty": 3}] and row["tags"] == [("k", 7)] and row["maybe"] == 0
    assert row["at"] == AT


def test_encode_then_decode_gives_every_row_back(file_set):
    rows = [full_row(i) for i in range(3)]
    t = message_type(ProtoSchema(file_set).message("Order"))
    encoded = ProtobufEncoder(file_set, "shop.Order").encode(pa.array(rows + [None], t))
    decoded, errors = ProtobufDecoder(file_set, "shop.Order").decode(encoded)
    assert errors == [None] * 4 and encoded[3].as_py() is None
    assert decoded.to_pylist()[:3] == pa.array(rows, t).to_pylist()


def test_wire_format_names_the_writer_and_the_message(file_set):
    t = message_type(ProtoSchema(file_set).message("Order"))
    value = ProtobufEncoder(file_set, "Order", schema_id=21).encode(pa.array([full_row(1)], t))[0].as_py()
    schema_id, indexes, body = unframe(value)
    assert (schema_id, indexes) == (21, (1,))         # Order is the file's second message
    line = ProtobufEncoder(file_set, "shop.Order.Line", schema_id=21)
    assert line.indexes == (1, 0)
    writers = {21: ProtoSchema(file_set)}

    def lookup(schema_id: int) -> ProtoSchema:
        if schema_id not in writers:
            raise UnknownSchemaId(f"unknown schema id {schema_id}")
        return writers[schema_id]
    dec = ProtobufDecoder(file_set, "Order", lookup)
    bad_index = frame(21, (5,), body)
    decoded, errors = dec.decode(pa.array([value, frame(99, (1,), body), bad_index, frame(21, (1,), b"\xff\xff\xff")]))
    assert decoded.to_pylist()[0]["id"] == "o-1" and errors[0] is None
    assert errors[1] == "unknown schema id 99"
    assert "message index 5 out of range" in errors[2] and "has 2 message(s)" in errors[2]
    assert errors[3].startswith("invalid Protobuf")


def test_a_value_that_does_not_parse_is_its_rows_error(file_set):
    decoded, errors = ProtobufDecoder(file_set, "Order").decode(pa.array([b"\xff\xff\xff", b""]))
    assert decoded.to_pylist()[0] is None and errors[0].startswith("invalid Protobuf") and "shop.Order" in errors[0]
    assert errors[1] is None and decoded.to_pylist()[1]["id"] == ""   # empty bytes: every field unset


def test_a_row_that_does_not_fit_names_the_field(file_set):
    t = pa.struct([("id", pa.string()), ("status", pa.string())])
    with pytest.raises(ValueError, match=r"row 1 .*status: 'LOST' is not a value of enum shop.Order.Status"):
        ProtobufEncoder(file_set, "Order").encode(pa.array([{"id": "a", "status": "NEW"}, {"id": "b", "status": "LOST"}], t))


def test_a_recursive_message_is_refused_naming_the_field():
    fs = compile_schema('syntax = "proto3"; message Node { string v = 1; Child c = 2; }'
                        ' message Child { Node back = 1; }', "tree.proto")
    with pytest.raises(ProtoTypeError, match=r"field c.back: message Node contains itself"):
        message_type(ProtoSchema(fs).message("Node"))
    struct_fs = compile_schema('syntax = "proto3"; import "google/protobuf/struct.proto";'
                               ' message E { google.protobuf.Struct attrs = 1; }', "e.proto")
    with pytest.raises(ProtoTypeError, match=r"field attrs\.fields\.value"):
        message_type(ProtoSchema(struct_fs).message("E"))


def test_protoc_errors_and_unknown_messages_are_clear(file_set):
    with pytest.raises(ProtoSchemaError, match=r"bad.proto does not compile: bad.proto:1:.*"):
        compile_schema('syntax = "proto3"; message { }', "bad.proto")
    with pytest.raises(ProtoSchemaError, match=r"no message 'Nope' in order.proto \(it declares: shop.Ping, shop.Order\)"):
        ProtoSchema(file_set).message("Nope")


def test_imports_and_a_base64_descriptor_compile():
    common = 'syntax = "proto3"; package common; message Money { int64 cents = 1; string currency = 2; }'
    main = 'syntax = "proto3"; import "common/money.proto"; message Pay { common.Money m = 1; }'
    fs = compile_schema(main, "pay.proto", {"common/money.proto": common})
    assert message_type(ProtoSchema(fs).message("Pay")) == pa.struct(
        [("m", pa.struct([("cents", pa.int64()), ("currency", pa.string())]))])
    import base64
    from google.protobuf import descriptor_pb2
    files = descriptor_pb2.FileDescriptorSet.FromString(compile_schema(ORDER, "order.proto")).file
    as_base64 = base64.b64encode(files[-1].SerializeToString()).decode()    # how Confluent's Python client registers
    assert message_type(ProtoSchema(compile_schema(as_base64)).message("Order")).num_fields == 16


def test_the_formats_table_routes_protobuf(file_set):
    serde = ValueSerde(DataFormat.PROTOBUF, descriptors=file_set, message="Order")
    t = decoder(serde).arrow_type
    out = encoder(serde).encode(pa.array([full_row(0)], t))
    assert decoder(serde).decode(out)[0].to_pylist()[0]["id"] == "o-0"
    from_text = ValueSerde(DataFormat.PROTOBUF, schema_text=ORDER, message="Ping")
    assert decoder(from_text).arrow_type == pa.struct([("id", pa.string())])
    with pytest.raises(ValueError, match="writer schema id"):
        encoder(ValueSerde(DataFormat.PROTOBUF, descriptors=file_set, registry=Registry("http://r:8081")))


def test_proto2_presence_and_an_enum_number_the_schema_does_not_name():
    fs = compile_schema('syntax = "proto2"; message P { optional int32 n = 1; required string s = 2; '
                        'optional E e = 3; } enum E { A = 0; B = 1; }', "p.proto")
    cls = message_class(ProtoSchema(fs), "P")
    unset = cls(s="x").SerializeToString()
    open_enum = compile_schema('syntax = "proto3"; message Q { F f = 1; } enum F { Z = 0; }', "q.proto")
    newer = compile_schema('syntax = "proto3"; message Q { F f = 1; } enum F { Z = 0; Y = 7; }', "q.proto")
    later = message_class(ProtoSchema(newer), "Q")(f=7).SerializeToString()
    assert ProtobufDecoder(fs, "P").decode(pa.array([unset]))[0].to_pylist() == [{"n": None, "s": "x", "e": None}]
    assert ProtobufDecoder(open_enum, "Q").decode(pa.array([later]))[0].to_pylist() == [{"f": "7"}]
