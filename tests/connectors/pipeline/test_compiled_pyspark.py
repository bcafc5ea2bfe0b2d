"""kafka-eos run's Spark home: the compiled overlay where SPARK_HOME is unset, the user's kept."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafka_eos.connectors import spark_home
from kafka_eos.connectors.pipeline import compiled_pyspark, submit
from tests.connectors.test_spark_home import fake_home


@pytest.fixture
def pip_home(tmp_path, monkeypatch) -> Path:
    home = fake_home(tmp_path / "site")
    monkeypatch.setattr(spark_home, "pip_home", lambda: home)
    return home


def test_the_cache_folder():
    assert compiled_pyspark.cache_dir({"HOME": "/home/u"}) == Path("/home/u/.cache/kafka-eos/spark-home")
    assert compiled_pyspark.cache_dir({"HOME": "/h", "XDG_CACHE_HOME": "/c"}) == Path("/c/kafka-eos/spark-home")
    assert compiled_pyspark.cache_dir({"KAFKA_EOS_SPARK_HOME_CACHE": "/x"}) == Path("/x")
    assert compiled_pyspark.cache_dir({"KAFKA_EOS_SPARK_HOME_CACHE": "Off"}) is None


def test_an_unset_or_empty_spark_home_becomes_the_overlay_built_in_the_cache(tmp_path, pip_home):
    env = {"KAFKA_EOS_SPARK_HOME_CACHE": str(tmp_path / "cache"), "PATH": "/bin"}
    first = compiled_pyspark.with_spark_home(env)
    assert Path(first["SPARK_HOME"]).parent == tmp_path / "cache"
    assert (Path(first["SPARK_HOME"]) / "jars").resolve() == pip_home / "jars"
    assert compiled_pyspark.with_spark_home({**env, "SPARK_HOME": " "}) == first
    assert env == {"KAFKA_EOS_SPARK_HOME_CACHE": str(tmp_path / "cache"), "PATH": "/bin"}, "the caller's is unchanged"


def test_a_spark_home_the_user_set_is_kept_and_off_builds_nothing(tmp_path, pip_home):
    cache = tmp_path / "cache"
    kept = compiled_pyspark.with_spark_home({"SPARK_HOME": "/opt/spark", "KAFKA_EOS_SPARK_HOME_CACHE": str(cache)})
    assert kept["SPARK_HOME"] == "/opt/spark"
    assert "SPARK_HOME" not in compiled_pyspark.with_spark_home({"KAFKA_EOS_SPARK_HOME_CACHE": "off", "SPARK_HOME": ""})
    assert not cache.exists()


def test_a_cache_that_cannot_be_written_starts_spark_as_before(tmp_path, pip_home):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert "SPARK_HOME" not in compiled_pyspark.with_spark_home({"KAFKA_EOS_SPARK_HOME_CACHE": str(blocker / "x")})


def test_a_local_driver_of_this_process_gets_it_in_its_environment(tmp_path, pip_home):
    env = {"KAFKA_EOS_SPARK_HOME_CACHE": str(tmp_path / "cache"), "SPARK_HOME": ""}
    compiled_pyspark.set_spark_home(env)
    assert Path(env["SPARK_HOME"]).parent == tmp_path / "cache"
    env = {"KAFKA_EOS_SPARK_HOME_CACHE": "off", "SPARK_HOME": ""}
    compiled_pyspark.set_spark_home(env)
    assert "SPARK_HOME" not in env, "an empty SPARK_HOME would break pyspark's own lookup"


def test_submit_runs_spark_submit_with_the_overlay(tmp_path, pip_home, monkeypatch):
    monkeypatch.setenv("KAFKA_EOS_SPARK_HOME_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KAFKA_EOS_JVM_ARCHIVES", "off")
    monkeypatch.delenv("SPARK_HOME", raising=False)
    seen: list[dict] = []

    class Started:
        def __init__(self, cmd, env, **kwargs):
            seen.append(env)
            self.stdout = self.stderr = iter(())

        def wait(self):
            return 0

    monkeypatch.setattr(subprocess, "Popen", Started)
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("name: p\n")
    assert submit.submit(pipeline, "local[2]", lambda line: line) == 0
    assert Path(seen[0]["SPARK_HOME"]).parent == tmp_path / "cache"
