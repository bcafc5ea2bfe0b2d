"""Finding a JDK of a needed version and naming what the local schema registry lacks (no JVM runs here)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafka_eos.connectors.dev import java_env
from kafka_eos.connectors.dev.java_env import BrokerEnvironmentError, find_java
from kafka_eos.connectors.dev.registry_dist import java_needed, registry_home


def fake_jdk(root: Path, name: str, version: str) -> Path:
    java = root / name / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2025-01-01' >&2\n")
    java.chmod(0o755)
    return java


@pytest.fixture
def jdks(tmp_path, monkeypatch):
    old = fake_jdk(tmp_path / "home", "jdk-17", "17.0.9")
    folder = tmp_path / "jvm"
    newer = fake_jdk(folder, "some-vendor-25-jdk", "25.0.1")
    monkeypatch.setenv("JAVA_HOME", str(old.parent.parent))
    monkeypatch.setenv("PATH", str(old.parent))
    monkeypatch.setattr(java_env, "JDK_FOLDERS", (str(folder),))
    return old, newer


def test_the_configured_java_wins_when_it_is_new_enough(jdks):
    old, _ = jdks
    assert find_java(17, "x") == str(old)


def test_a_newer_jdk_is_found_beside_the_configured_one(jdks):
    _, newer = jdks
    assert find_java(21, "Apicurio Registry 3.3.3") == str(newer)


def test_no_jdk_new_enough_names_what_was_found(jdks):
    with pytest.raises(BrokerEnvironmentError, match=r"Apicurio Registry 9 needs Java 99\+; found only: .*Java 17"):
        find_java(99, "Apicurio Registry 9")


def test_apicurio_3_0_runs_on_java_17_later_ones_need_21():
    assert (java_needed("3.0.9"), java_needed("3.3.3"), java_needed("4.0.0")) == (17, 21, 21)


def test_an_unreachable_repository_is_named_with_the_fixes(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_EOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KAFKA_EOS_MAVEN_REPO", "http://127.0.0.1:9")
    with pytest.raises(BrokerEnvironmentError, match="could not download Apicurio Registry 3.0.9 from "
                       "http://127.0.0.1:9/io/apicurio/.*KAFKA_EOS_MAVEN_REPO.*SCHEMA_REGISTRY_URL"):
        registry_home("3.0.9")
    assert not any((tmp_path / "cache").rglob(".complete")), "nothing half-downloaded is marked usable"
    assert os.listdir(tmp_path / "cache" / "apicurio") == []
