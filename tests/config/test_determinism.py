"""Replay determinism: the pure verdicts, the static SQL scan, and `kafka-eos validate`'s report."""
from __future__ import annotations

import pytest

from kafka_eos.config import determinism
from kafka_eos.config.determinism import REFUSE, WARN, sql_calls
from kafka_eos.connectors.cli import main
from tests.factories import paths, problems, valid, write


@pytest.mark.parametrize("text, calls", [
    ("SELECT key, rand() AS r FROM source", ["rand"]),
    ("SELECT RANDN(3), Uuid ( ) FROM source", ["randn", "uuid"]),
    ("SELECT shuffle(value.items), monotonically_increasing_id() FROM source",
     ["shuffle", "monotonically_increasing_id"]),
    ("SELECT random() AS r, spark_partition_id() FROM source", ["random", "spark_partition_id"]),
])
def test_scan_finds_non_deterministic_calls(text, calls):
    assert sql_calls(text) == calls


@pytest.mark.parametrize("text", [
    "SELECT key, current_timestamp() AS t, now(), current_date() FROM source",   # replay-safe (batch time)
    "SELECT key, 'rand()' AS s, \"uuid()\" AS d FROM source",                   # string literals
    "SELECT key -- rand() in a comment\n, value /* uuid() */ FROM source",
    "SELECT key, `rand` AS operand, brand(x), value.rand FROM source",          # not calls of rand
])
def test_scan_ignores_safe_functions_literals_comments_and_other_names(text):
    assert sql_calls(text) == []


def test_expression_verdict_names_sql_text_and_fix():
    f = determinism.expression("Rand", "rand(42)")
    assert f.severity == REFUSE and f.what == "rand(42)" and "xxhash64" in f.fix
    udf = determinism.expression("PythonUDF", "f(value)")
    assert "asNondeterministic" in udf.reason


def test_round_robin_is_refused_only_without_sort_before_repartition():
    assert determinism.repartition(True, 4, sort_before_repartition=True, after_shuffle=False) is None
    refused = determinism.repartition(True, 4, sort_before_repartition=False, after_shuffle=False)
    assert refused.severity == REFUSE and refused.what == "repartition(4)"
    assert "repartition(4, <key columns>)" in refused.fix


def test_coalesce_is_refused_only_after_a_shuffle():
    assert determinism.repartition(False, 2, True, after_shuffle=False) is None
    refused = determinism.repartition(False, 2, True, after_shuffle=True)
    assert refused.severity == REFUSE and refused.what == "coalesce(2)"


def test_stream_static_join_is_a_warning():
    assert determinism.stream_static_join("Join Inner").severity == WARN


def _with(tmp_path, **transform):
    data = valid(tmp_path)
    data["transform"] = {**data["transform"], **transform}
    return data


def test_rule_reports_the_yaml_path_of_each_call(tmp_path):
    data = _with(tmp_path, sql="SELECT key, value, rand() AS r FROM source",
                 steps=[{"filter": "uuid() IS NOT NULL"}, {"select": ["key", "value", "now() AS t"]}])
    found = [v for v in problems(tmp_path, data) if "non-deterministic" in v.message]
    assert paths(found) == ["transform.sql", "transform.steps[0].filter"]
    assert "rand()" in found[0].message and "transform.allow_nondeterministic: true" in found[0].fix


def test_rule_accepts_current_timestamp_the_opt_out_and_at_least_once(tmp_path):
    assert problems(tmp_path, _with(tmp_path, sql="SELECT key, value, current_timestamp() AS t FROM source")) == []
    assert problems(tmp_path, _with(tmp_path, sql="SELECT key, value, rand() AS r FROM source",
                                    allow_nondeterministic=True)) == []
    data = _with(tmp_path, sql="SELECT key, value, rand() AS r FROM source")
    data["guarantee"] = "at_least_once"
    assert not [v for v in problems(tmp_path, data) if "non-deterministic" in v.message]


def test_validate_exits_1_naming_the_yaml_path(tmp_path, capsys):
    path = write(tmp_path, "p.yaml", _with(tmp_path, sql="SELECT key, value FROM source WHERE rand() < 0.5"))
    assert main(["validate", "--offline", str(path)]) == 1
    err = capsys.readouterr().err
    assert "transform.sql: rand() is non-deterministic" in err and "allow_nondeterministic" in err
