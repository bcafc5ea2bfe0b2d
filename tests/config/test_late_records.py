import pytest

from kafka_eos.config.late_records import LateSpec, LateSpecError, late_spec


@pytest.mark.parametrize("sql, spec", [
    ("SELECT 1 FROM source GROUP BY window(event_time, '1 minute'), value.page",
     LateSpec("tumbling", "1 minute", "1 minute", "0 seconds")),
    ("SELECT 1 FROM source GROUP BY WINDOW(`event_time`, '10 minutes', '5 minutes'), k",
     LateSpec("sliding", "10 minutes", "5 minutes", "0 seconds")),
    ("SELECT 1 FROM source GROUP BY window(s.event_time, \"1 hour\", \"1 hour\", '15 minutes')",
     LateSpec("tumbling", "1 hour", "1 hour", "15 minutes")),
    ("SELECT session_window(event_time, '5 minutes') AS s FROM source GROUP BY session_window(event_time, '5 minutes')",
     LateSpec("session", "5 minutes")),
    ("SELECT DISTINCT key, event_time FROM source", LateSpec("event_time")),
    ("SELECT 1 FROM source -- window(other, '1 minute')\nGROUP BY window(event_time, '1 minute')",
     LateSpec("tumbling", "1 minute", "1 minute", "0 seconds")),
    (None, LateSpec("event_time")),
])
def test_the_bound_spark_compares_with_the_watermark(sql, spec):
    assert late_spec(sql, "event_time") == spec


@pytest.mark.parametrize("sql, says", [
    ("GROUP BY window(ts, '1 minute')", "not over the watermark column 'event_time'"),
    ("GROUP BY window(event_time, '1 minute'), window(event_time, '2 minutes')", "2 different windows"),
    ("GROUP BY window(event_time, INTERVAL 1 MINUTE)", "not a literal duration"),
    ("GROUP BY session_window(event_time, CASE WHEN k = 1 THEN '1 minute' ELSE '2 minutes' END)",
     "session gap .* is not a literal duration"),
])
def test_queries_without_one_bound_are_refused_with_the_reason(sql, says):
    with pytest.raises(LateSpecError, match=says):
        late_spec(sql, "event_time")


def test_only_the_watermark_column_has_nulls_dropped_by_a_window():
    assert late_spec("GROUP BY window(event_time, '1 minute')", "event_time").drops_null_time
    assert not late_spec("SELECT DISTINCT * FROM source", "event_time").drops_null_time
