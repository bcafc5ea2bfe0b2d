"""worker_daemon: kafka-eos's daemon only where the workers run this interpreter; its preload
leaves no Python thread, pandas loaded for pyarrow, and the rest frozen.

The preload runs in its own interpreter: it imports the data path and freezes the heap."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_eos.connectors.worker_daemon import DAEMON_MODULE_CONF, daemon_conf

OURS = {DAEMON_MODULE_CONF: "kafka_eos.connectors.worker_daemon"}


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", " local[4,3] "])
def test_a_local_master_on_this_interpreter_gets_the_preloading_daemon(master):
    assert daemon_conf(master, {}, {}) == OURS
    assert daemon_conf(master, {"spark.pyspark.python": sys.executable}, {"PYSPARK_PYTHON": sys.executable}) == OURS


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "k8s://https://api:6443", "local-cluster[2,1,1024]",
                                    "sc://localhost:15002"])
def test_a_cluster_master_keeps_pysparks_daemon(master):
    """Its daemon starts before --py-files reach the worker: kafka-eos may not be importable there."""
    assert daemon_conf(master, {}, {}) == {}


def test_workers_on_another_interpreter_keep_pysparks_daemon():
    assert daemon_conf("local[2]", {}, {"PYSPARK_PYTHON": "/opt/other/bin/python3"}) == {}
    assert daemon_conf("local[2]", {"spark.pyspark.python": "/opt/other/bin/python3"}, {}) == {}


def test_a_daemon_module_the_caller_set_is_kept():
    assert daemon_conf("local[2]", {DAEMON_MODULE_CONF: "my.daemon"}, {}) == {}


PROBE = """
import gc, json, sys, threading
from kafka_eos.connectors import worker_daemon
worker_daemon.preload()
print(json.dumps({"threads": threading.active_count(), "frozen": gc.get_freeze_count(),
                  "loaded": [m for m in worker_daemon.PRELOADED if m in sys.modules]}))
"""


def test_the_preload_loads_the_data_path_starts_no_python_thread_and_freezes_it():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["threads"] == 1
    assert out["frozen"] > 50_000, out["frozen"]  # pyarrow, pandas, confluent-kafka, the data path: ~90k
    assert "pandas" in out["loaded"] and len(out["loaded"]) == len(set(out["loaded"]))
    from kafka_eos.connectors.worker_daemon import PRELOADED
    assert out["loaded"] == list(PRELOADED)


class _Conf(dict):
    def get(self, key, default=None):  # SparkConf.get's signature
        return super().get(key, default)


class _Context:
    def __init__(self, conf: dict):
        self._conf = _Conf(conf)

    def getConf(self):
        return self._conf


class _Session:
    def __init__(self, conf: dict):
        self.sparkContext = _Context(conf)


@pytest.mark.parametrize("conf", [{}, {DAEMON_MODULE_CONF: "pyspark.daemon"}])
def test_no_early_start_without_kafka_eos_daemon(conf):
    """A cluster master, or a daemon the user chose: its workers start with the first batch."""
    from kafka_eos.connectors.worker_daemon import start_early
    assert start_early(_Session(conf)) is None
