"""A group's pipelines must not share a name, checkpoint, prefix or metrics port (each named by file)."""
from __future__ import annotations

from dataclasses import replace

from kafka_eos.config.model import MetricsSpec, PipelineConfig
from kafka_eos.config.rules_group import group_violations
from tests.factories import loaded


def _cfg(name: str | None, checkpoint: str, origin: str, tmp_path=None) -> PipelineConfig:
    cfg = _base()
    cfg = replace(cfg, name=name, origin=origin, checkpoint=replace(cfg.checkpoint, location=checkpoint))
    return replace(cfg, sink=replace(cfg.sink, transactional_id_prefix=None))


def _base(cache: list = []) -> PipelineConfig:  # noqa: B006 - loaded once
    if not cache:
        from pathlib import Path
        cache.append(loaded(Path("/tmp")))
    return cache[0]


def test_distinct_pipelines_make_a_valid_group():
    assert group_violations([_cfg("a", "/c/a", "a.yaml"), _cfg("b", "/c/b", "b.yaml")]) == []


def test_a_shared_checkpoint_is_refused_naming_both_files():
    found = group_violations([_cfg("a", "/c/x", "a.yaml"), _cfg("b", "/c/x", "b.yaml")])
    assert [v.path for v in found] == ["checkpoint.location"]
    assert found[0].file == "b.yaml" and "a.yaml" in found[0].message


def test_a_shared_name_and_its_derived_prefix_are_refused():
    found = group_violations([_cfg("a", "/c/x", "a.yaml"), _cfg("a", "/c/y", "b.yaml")])
    assert [v.path for v in found] == ["name"]  # the derived prefixes differ: one hash per checkpoint


def test_unnamed_pipelines_share_the_default_name():
    found = group_violations([_cfg(None, "/c/x", "a.yaml"), _cfg(None, "/c/y", "b.yaml")])
    assert [v.path for v in found] == ["name"]


def test_a_set_prefix_and_a_metrics_port_shared_are_refused():
    a, b = _cfg("a", "/c/a", "a.yaml"), _cfg("b", "/c/b", "b.yaml")
    a = replace(a, sink=replace(a.sink, transactional_id_prefix="p"), metrics=MetricsSpec(port=9400))
    b = replace(b, sink=replace(b.sink, transactional_id_prefix="p"), metrics=MetricsSpec(port=9400))
    assert [v.path for v in group_violations([a, b])] == ["sink.transactional_id_prefix", "metrics.port"]
