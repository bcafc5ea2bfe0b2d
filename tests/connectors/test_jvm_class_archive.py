"""Which class archive a JVM maps: one per (JDK, jars, options), named only once built."""
from __future__ import annotations

from pathlib import Path

from kafka_eos.connectors import jvm_class_archive as archives


def _jars(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"x" * len(name))
    return directory


def test_the_archive_name_changes_with_the_jars_and_the_options(tmp_path):
    one = _jars(tmp_path / "a", "kafka_2.13-4.2.1.jar", "scala-library.jar")
    other = _jars(tmp_path / "b", "kafka_2.13-3.9.1.jar", "scala-library.jar")
    names = {archives.kafka_archive(tmp_path / "jvm", "java", f"{jars}/*", options).name
             for jars in (one, other) for options in ("-XX:+UseSerialGC", "-XX:+UseG1GC")}
    assert len(names) == 4
    assert archives.kafka_archive(tmp_path / "jvm", "java", f"{one}/*", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1") \
        == archives.kafka_archive(tmp_path / "jvm", "java", f"{one}/*", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def test_an_archive_is_mapped_only_once_built_and_a_mismatch_stays_quiet(tmp_path):
    archive = tmp_path / "kafka-broker-0.jsa"
    assert archives.mapped(archive) == []
    archive.write_bytes(b"")
    assert archives.mapped(archive) == [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def test_a_failed_build_leaves_no_archive_and_no_partial_file(tmp_path):
    def fails(partial: Path) -> None:
        partial.write_bytes(b"half")
        raise RuntimeError("the warm-up failed")

    target = tmp_path / "jvm" / "spark-driver-0.jsa"
    try:
        archives._build(target, fails)
    except RuntimeError:
        pass
    assert not target.exists() and list((tmp_path / "jvm").iterdir()) == []
    assert archives._build(target, lambda partial: partial.write_bytes(b"whole")).read_bytes() == b"whole"


def test_the_archive_path_is_absolute_from_a_relative_directory(tmp_path, monkeypatch):
    """The spark-submit that dumps it runs in a directory of its own: a relative path would land
    there (a build from `build/jvm` failed: "Unable to create shared archive file")."""
    jars = _jars(tmp_path / "jars", "kafka_2.13-4.2.1.jar")
    monkeypatch.chdir(tmp_path)
    archive = archives.kafka_archive(Path("build/jvm"), "java", f"{jars}/*", "-XX:+UseSerialGC")
    assert archive.is_absolute() and archive.parent == tmp_path / "build" / "jvm"
