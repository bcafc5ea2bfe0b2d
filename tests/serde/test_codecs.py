"""The table of value formats: every format is in it, and each builds codecs that round-trip."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from kafka_eos.serde.codecs import FORMATS, ValueSerde, decoder, encoder
from kafka_eos.serde.formats import DataFormat

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]})


def test_every_format_has_codecs():
    assert set(FORMATS) == set(DataFormat)


@pytest.mark.parametrize("fmt,values", [
    (DataFormat.BYTES, pa.array([b"a", None], pa.binary())),
    (DataFormat.STRING, pa.array(["a", None], pa.string())),
    (DataFormat.JSON, pa.array([{"id": 1}, {"id": 2}], pa.struct([("id", pa.int64())]))),
    (DataFormat.AVRO, pa.array([{"id": 1}, {"id": 2}], pa.struct([("id", pa.int64())]))),
])
def test_each_format_round_trips(fmt, values):
    serde = ValueSerde(fmt, SCHEMA if fmt in (DataFormat.JSON, DataFormat.AVRO) else None)
    decoded, errors = decoder(serde).decode(encoder(serde).encode(values))
    assert decoded.to_pylist() == values.to_pylist() and errors == [None] * len(values)


def test_json_without_a_schema_cannot_decode():
    with pytest.raises(ValueError, match="needs a schema"):
        decoder(ValueSerde(DataFormat.JSON))
