"""Each Spark option is declared once: the parsers, the option maps, the YAML rule and the docs follow it."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafka_eos.config.option_docs import blocks, render_readme
from kafka_eos.config.spark_option import Kind
from kafka_eos.config.spark_option_table import SINK_OPTIONS, SOURCE_OPTIONS, declared, yaml_keys
from kafka_eos.connectors.pipeline.spark_options import sink_options, source_options
from tests.factories import loaded, problems, valid

README = Path(__file__).resolve().parents[2] / "config" / "README.md"
ALL = SOURCE_OPTIONS + SINK_OPTIONS


def test_the_readme_option_tables_are_the_declarations():
    text = README.read_text()
    assert blocks(text) == ["source", "sink"]
    assert render_readme(text) == text, "regenerate: python -m kafka_eos.config.option_docs config/README.md"


def test_names_are_declared_once_per_side_ignoring_case():
    for side in (SOURCE_OPTIONS, SINK_OPTIONS):
        keys = [o.key for o in side]
        assert len(keys) == len(set(keys))
    assert declared("sink", "FIXEDPARTITIONS").name == "fixedPartitions"
    with pytest.raises(KeyError):
        declared("source", "noSuchOption")


@pytest.mark.parametrize("option", [o for o in ALL if o.default is not None], ids=lambda o: f"{o.side}.{o.name}")
def test_a_default_written_as_text_reads_back_as_itself(option):
    assert option.read({option.name.upper(): option.text(option.default)}) == option.default


@pytest.mark.parametrize("kind,bad,needle", [(Kind.BOOL, "yes", "must be true or false"),
                                             (Kind.POSITIVE, "0", "must be at least 1"),
                                             (Kind.NON_NEGATIVE, "-1", "must not be negative"),
                                             (Kind.INT, "soon", "must be a whole number")])
def test_a_wrong_value_names_the_option_and_what_is_allowed(kind, bad, needle):
    option = next(o for o in ALL if o.kind is kind)
    with pytest.raises(ValueError, match=f"{option.side} option {option.name}=.*{needle}"):
        option.read({option.key: bad})


def test_the_option_maps_use_only_declared_names(tmp_path):
    cfg = loaded(tmp_path, lambda d: d["source"].update(include_headers=True, max_offsets_per_trigger=5,
                                                           align={"max_drift": "30 seconds"}))
    for side, options in (("source", source_options(cfg)), ("sink", sink_options(cfg))):
        undeclared = [k for k in options if not k.startswith("kafka.") and k.lower() not in yaml_keys(side)]
        assert undeclared == [], f"{side} options without a declared YAML key: {undeclared}"


@pytest.mark.parametrize("side,name", [(o.side, o.name) for o in ALL if o.yaml and not o.key.startswith("kafka.")])
def test_an_option_a_yaml_key_sets_is_refused_in_options_naming_that_key(tmp_path, side, name):
    data = valid(tmp_path)
    data[side]["options"] = {name.upper(): "x"}
    found = [v for v in problems(tmp_path, data) if v.path == f'{side}.options["{name.upper()}"]']
    assert found and "has its own key" in found[0].message
    assert declared(side, name).yaml in found[0].fix


def test_validate_refuses_a_test_hook_in_a_pipeline_file_unless_the_suites_allow_it(tmp_path, monkeypatch):
    from kafka_eos.config.spark_option import TEST_HOOKS_ENV
    data = valid(tmp_path)
    data["sink"]["options"] = {"faultInjection": "after_decision@1"}
    monkeypatch.delenv(TEST_HOOKS_ENV, raising=False)
    found = [v for v in problems(tmp_path, data) if v.path == "sink"]
    assert found and "sink option faultInjection is a test hook" in found[0].message
    monkeypatch.setenv(TEST_HOOKS_ENV, "1")
    assert [v for v in problems(tmp_path, data) if v.path == "sink"] == []
