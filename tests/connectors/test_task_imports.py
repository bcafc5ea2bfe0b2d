"""A Python worker that runs kafka-eos's tasks or loads the data source imports no kafka-python:
the control plane (EndTxn, the aborter, the broker checks) is the driver's alone, and each of the
role workers pyspark starts per query (lookup, create, plan, write, the task workers) would pay its
~0.1 s import again."""
from __future__ import annotations

import subprocess
import sys

import pytest

TASK_SIDE = ("kafka_eos.connectors.datasource", "kafka_eos.connectors.source.partition_reader",
             "kafka_eos.connectors.source.range_reader", "kafka_eos.connectors.sink.stream_writer",
             "kafka_eos.connectors.source.stream_reader")


@pytest.mark.parametrize("module", TASK_SIDE)
def test_a_task_side_module_does_not_import_kafka_python(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m == 'kafka' or m.startswith('kafka.'))[:5])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", f"{module} imports kafka-python: {out.stdout.strip()}"


def test_the_control_plane_still_loads_kafka_python_when_built():
    code = ("import sys; from kafka_eos.txn.cluster.control_plane import control_plane; "
            "from kafka_eos.oauth_tokens import _register_with_kafka_python; _register_with_kafka_python(); "
            "print('kafka.errors' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "True"
