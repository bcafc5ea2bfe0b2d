"""The sink's timestamp column: which column, of which type (Spark schemas only, no session)."""
from __future__ import annotations

import pytest
from pyspark.sql.types import (IntegerType, LongType, StringType, StructField, StructType, TimestampNTZType,
                               TimestampType)

from kafka_eos.connectors.sink.record_timestamp import select_exprs
from kafka_eos.connectors.sink.startup_checks import check_schema
from kafka_eos.txn.protocol.errors import SinkConfigError
from kafka_eos.txn.protocol.sink_config import SinkConfig

WINDOW = StructType([StructField("start", TimestampType()), StructField("end", TimestampType())])
ROWS = StructType([StructField("value", StringType()), StructField("window", WINDOW),
                   StructField("ms", LongType()), StructField("n", IntegerType())])


def test_the_default_column_is_used_where_the_rows_have_it_and_nothing_else_is_implied():
    with_ts = StructType(ROWS.fields + [StructField("timestamp", TimestampType())])
    assert select_exprs(with_ts, "timestamp") == ["`timestamp` AS timestamp"]
    assert select_exprs(ROWS, "timestamp") == [], "no such column: the producer's clock"
    assert select_exprs(with_ts, None) == [], "null: the producer's clock"


def test_a_window_end_or_a_long_of_epoch_ms_is_a_records_timestamp():
    assert select_exprs(ROWS, "window.end") == ["`window`.`end` AS timestamp"]
    assert select_exprs(ROWS, "ms") == ["`ms` AS timestamp"]


def test_a_column_absent_or_of_another_type_is_refused_naming_the_key_the_column_and_the_fix():
    with pytest.raises(ValueError, match=r"sink.timestamp_column: the transform gives no column 'ts'.*AS ts"):
        select_exprs(ROWS, "ts")
    with pytest.raises(ValueError, match=r"sink.timestamp_column: column 'n' is int: .*CAST\(\.\.\. AS TIMESTAMP\)"):
        select_exprs(ROWS, "n")
    with pytest.raises(ValueError, match="column 'window' is struct"):
        select_exprs(ROWS, "window")
    with pytest.raises(ValueError, match="no column 'window.middle'"):
        select_exprs(ROWS, "window.middle")


def test_the_spark_sink_takes_a_timestamp_or_long_timestamp_column_and_refuses_others():
    config = SinkConfig(producer_conf={"bootstrap.servers": "x:1"}, transactional_id_prefix="p", log_location="/tmp/u",
                        topic="t")
    for kind in (TimestampType(), LongType()):
        check_schema(StructType([StructField("value", StringType()), StructField("timestamp", kind)]), config)
    for kind in (StringType(), TimestampNTZType(), IntegerType()):
        with pytest.raises(SinkConfigError, match="sink column 'timestamp' is .*timestamp or a long"):
            check_schema(StructType([StructField("value", StringType()), StructField("timestamp", kind)]), config)
