"""kafka-eos run's driver class archive: where it lives, when it is mapped, written, or left alone."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafka_eos.connectors import jvm_class_archive
from kafka_eos.connectors.pipeline import driver_archive


@pytest.fixture
def keyed(monkeypatch):
    """spark_archive without asking java: the key is the options' text."""
    def archive(directory: Path, options: str) -> Path:
        return Path(directory) / f"spark-driver-{abs(hash(options)) % 10**6}.jsa"
    monkeypatch.setattr(jvm_class_archive, "spark_archive", archive)
    return archive


def test_the_folder_is_the_users_cache_unless_named_or_off(tmp_path):
    assert driver_archive.archive_dir({"HOME": "/home/u"}) == Path("/home/u/.cache/kafka-eos/jvm")
    assert driver_archive.archive_dir({"HOME": "/home/u", "XDG_CACHE_HOME": "/c"}) == Path("/c/kafka-eos/jvm")
    assert driver_archive.archive_dir({"KAFKA_EOS_JVM_ARCHIVES": str(tmp_path)}) == tmp_path
    assert driver_archive.archive_dir({"KAFKA_EOS_JVM_ARCHIVES": "OFF"}) is None


def test_a_first_run_writes_the_archive_at_exit_and_it_is_moved_into_place(tmp_path, keyed):
    env = {"KAFKA_EOS_JVM_ARCHIVES": str(tmp_path)}
    first = driver_archive.plan(env)
    assert first.partial is not None and first.archive is not None and not first.archive.exists()
    assert first.options[0] == f"-XX:ArchiveClassesAtExit={first.partial}"
    first.partial.write_bytes(b"classes")  # what the driver JVM writes at a clean exit
    assert first.install() and first.archive.read_bytes() == b"classes"
    assert list(tmp_path.iterdir()) == [first.archive], "no temporary folder left"
    second = driver_archive.plan(env)
    assert second.partial is None and second.options[0] == f"-XX:SharedArchiveFile={first.archive}"
    assert "-XX:SharedArchiveFile" in driver_archive.with_archive({"SPARK_SUBMIT_OPTS": "-Da=b"}, second)[
        "SPARK_SUBMIT_OPTS"]


def test_a_driver_killed_before_writing_leaves_nothing(tmp_path, keyed):
    run = driver_archive.plan({"KAFKA_EOS_JVM_ARCHIVES": str(tmp_path)})
    assert not run.install()
    assert list(tmp_path.iterdir()) == []


def test_other_driver_options_get_an_archive_of_their_own(tmp_path, keyed):
    base = {"KAFKA_EOS_JVM_ARCHIVES": str(tmp_path)}
    assert driver_archive.plan(base).archive != driver_archive.plan({**base, "SPARK_SUBMIT_OPTS": "-XX:+UseSerialGC"}).archive


@pytest.mark.parametrize("user", ["-XX:SharedArchiveFile=/mine.jsa", "-XX:ArchiveClassesAtExit=/x.jsa"])
def test_an_archive_the_user_names_is_left_alone(tmp_path, keyed, user):
    env = {"KAFKA_EOS_JVM_ARCHIVES": str(tmp_path), "SPARK_SUBMIT_OPTS": user}
    assert driver_archive.plan(env) == driver_archive.DriverArchive()
    assert driver_archive.with_archive(env, driver_archive.plan(env)) == env


def test_off_maps_nothing(tmp_path, keyed):
    assert driver_archive.plan({"KAFKA_EOS_JVM_ARCHIVES": "off"}).options == ()


def test_no_java_to_ask_starts_without_an_archive(tmp_path, monkeypatch):
    """No Java 17 found: the archive is skipped (Spark's own start says what is missing), not an error
    about the local broker that a supervisor would read as unreachable."""
    from kafka_eos.connectors.dev import java_env

    def no_java() -> str:
        raise java_env.BrokerEnvironmentError("Java not found")
    monkeypatch.setattr(java_env, "java_binary", no_java)
    assert driver_archive.plan({"KAFKA_EOS_JVM_ARCHIVES": str(tmp_path)}) == driver_archive.DriverArchive()
