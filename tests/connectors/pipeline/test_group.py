"""A group's pure logic: its exit code, a member's restarts, the signal relay, the files of a directory."""
from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest

from kafka_eos import KafkaEosError
from kafka_eos.connectors.cli_group import group_files
from kafka_eos.connectors.pipeline.group import Member, StopRelay, group_exit_code


@pytest.mark.parametrize("codes,expected", [([0, 0, 0], 0), ([0, 4, 0], 4), ([4, 5, 0], 5), ([143, 4], 4),
                                            ([143, 0], 143), ([0, 1, 3], 1)])
def test_the_groups_code_is_the_first_permanent_then_transient_then_signal(codes, expected):
    assert group_exit_code(codes) == expected


class _Spark:
    def __init__(self):
        self.sparkContext = SimpleNamespace(properties={})
        self.sparkContext.setLocalProperty = self.sparkContext.properties.__setitem__


class Transient(KafkaEosError):
    pass


def _member(restarts: int, relay: StopRelay | None = None) -> tuple[Member, list[str]]:
    lines: list[str] = []
    cfg = SimpleNamespace(name="orders", secrets=lambda: [])
    return Member(cfg, str, lines.append, restarts, relay or StopRelay(), pause=lambda n: 0.0), lines  # type: ignore[arg-type]


def _runs(*outcomes):
    """A run that raises or returns the next of ``outcomes``; the calls made."""
    calls = []

    def run(spark, cfg, **kwargs):
        calls.append(kwargs)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return SimpleNamespace(exit_code=outcome, summary=lambda: f"kafka-eos orders: stopped ({outcome})")
    return run, calls


def test_a_transient_failure_restarts_the_query_in_the_application_then_the_run_ends():
    member, lines = _member(restarts=2)
    run, calls = _runs(RuntimeError("broker gone"), 0)
    spark = _spark = _Spark()
    member.serve(spark, run)
    assert len(calls) == 2 and member.outcome.code == 0 and _spark.sparkContext.properties == {
        "spark.scheduler.pool": "orders"}
    assert any("restart 1 of 2" in line for line in lines), lines


def test_a_permanent_failure_is_not_restarted():
    from kafka_eos.connectors.pipeline.runner import PipelineFailed
    member, lines = _member(restarts=5)
    run, calls = _runs(PipelineFailed("output topic re-created", exit_code=5), 0)
    member.serve(_Spark(), run)
    assert len(calls) == 1 and member.outcome.code == 5 and "re-created" in member.outcome.line


def test_restarts_end_when_none_is_left():
    member, lines = _member(restarts=1)
    run, calls = _runs(RuntimeError("a"), RuntimeError("b"), 0)
    member.serve(_Spark(), run)
    assert len(calls) == 2 and member.outcome.code == 4 and "no restart left (1 in a row)" in lines[-1]


def test_nothing_restarts_after_the_group_was_signalled():
    relay = StopRelay()
    relay.stopping.set()
    member, _ = _member(restarts=3, relay=relay)
    run, calls = _runs(RuntimeError("a"), 0)
    member.serve(_Spark(), run)
    assert len(calls) == 1


def test_the_relay_hands_a_signal_to_every_run_and_registers_through_the_run():
    relay = StopRelay()
    got = []
    for name in ("a", "b"):
        relay.register(SimpleNamespace(_on_signal=lambda signum, frame, name=name: got.append((name, signum))))
    relay.on_signal(signal.SIGTERM)
    assert got == [("a", signal.SIGTERM), ("b", signal.SIGTERM)] and relay.stopping.is_set()


def test_a_directory_stands_for_its_pipeline_files_sorted(tmp_path):
    for name in ("b.yaml", "a.yml", "notes.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub.yaml").mkdir()
    assert group_files([str(tmp_path)]) == [str(tmp_path / "a.yml"), str(tmp_path / "b.yaml")]
    assert group_files(["x.yaml", "y.yaml"]) == ["x.yaml", "y.yaml"]


def _pipeline_file(tmp_path, name: str, checkpoint: str):
    import yaml
    from tests.factories import valid
    data = valid(tmp_path)
    data["name"], data["checkpoint"]["location"] = name, str(tmp_path / checkpoint)
    del data["sink"]["transactional_id_prefix"]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_group_sharing_a_checkpoint_starts_nothing_and_names_both_files(tmp_path, capsys):
    from kafka_eos.connectors.cli import main
    a, b = _pipeline_file(tmp_path, "a", "same"), _pipeline_file(tmp_path, "b", "same")
    assert main(["run", a, b]) == 1
    err = capsys.readouterr().err
    assert "nothing was started" in err and f"{b}: checkpoint.location" in err and a in err, err


def test_what_a_group_does_not_take_is_refused_with_the_way_on(tmp_path, capsys):
    from kafka_eos.connectors.cli import main
    a, b = _pipeline_file(tmp_path, "a", "a"), _pipeline_file(tmp_path, "b", "b")
    assert main(["run", a, b, "--remote", "sc://x:15002", "--metrics-port", "9400"]) == 1
    err = capsys.readouterr().err
    assert "--remote: a group runs in this process" in err and "--metrics-port" in err, err


def test_each_pipeline_plans_for_its_share_of_the_slots():
    from kafka_eos.connectors.datasource import SHARE_SETTING, cluster_cores
    from kafka_eos.connectors.pipeline.group import slot_share
    assert [slot_share(8, n) for n in (1, 2, 3, 8, 20)] == [8, 4, 2, 1, 1] and slot_share(None, 2) is None
    session = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: "3" if key == SHARE_SETTING else default),
                              sparkContext=SimpleNamespace(master="local[8]", defaultParallelism=8))
    assert cluster_cores(session) == 3
