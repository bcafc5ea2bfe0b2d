"""`kafka-eos validate`'s report: a listed broker that does not answer is a warning, not a problem."""
from __future__ import annotations

from kafka_eos.config.validate import Report


def test_a_silent_broker_is_a_warning_and_leaves_the_exit_code():
    report = Report(files=["p.yaml"], warnings=["source.kafka: broker b1:9092 refused the connection (...)"])
    assert report.exit_code == 0
    assert report.render().splitlines() == ["p.yaml: OK", "warning: source.kafka: broker b1:9092 refused the connection (...)"]
